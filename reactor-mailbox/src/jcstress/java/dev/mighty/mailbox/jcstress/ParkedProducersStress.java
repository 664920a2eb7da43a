package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Mode;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.Signal;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;
import org.openjdk.jcstress.infra.results.III_Result;

import dev.mighty.mailbox.Mailbox;

/**
 * {@code k} freed slots vs {@code k + 1} producers blocked in {@code send} on a full mailbox: {@code k} get in, the
 * last stays blocked until a later receive frees its slot, and none is forgotten. A receive that wakes fewer than
 * all waiters (no herd) must still wake enough; one that wakes a producer that then finds no room must leave it
 * parked and woken by the next receive.
 *
 * <p>Two forms. {@code Mode.Termination} (runs on 2 CPUs): the actor blocks in {@code send} and starts the other
 * producers as threads of its own, then joins them; it terminates only if every producer got in. The
 * {@code ...Actors} forms put each producer on a jcstress actor (3 and 4 actors: jcstress schedules them only on
 * machines with that many CPUs); producers send with {@link Fixtures#HANG} (5 s) as the timeout and report 0 if it
 * passed, which only a lost wake-up makes a healthy run do; the consumer receives with the same bound and reports
 * the mask of the messages it got.
 */
public final class ParkedProducersStress {
    private ParkedProducersStress() {
    }

    /**
     * Capacity 1, full: two producers block in {@code send}; the consumer frees 1 slot, then receives the message
     * that took it, freeing it for the other.
     */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "both parked → the consumer freed 1 slot → one got in, the other stayed blocked → the consumer "
                    + "received the first, freeing the slot → the other was woken and got in")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "a producer stays parked beside a free slot: the receive woke nobody, or woke one that found "
                    + "the slot taken and was not woken again")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "a send threw")
    @State
    public static class OneFreedTwoParked {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);

        @Actor
        public void producers() throws InterruptedException {
            final Thread other = Fixtures.sender(mailbox, 2);
            mailbox.send(1);
            other.join();
        }

        @Signal
        public void consumer() {
            mailbox.tryRecv(); // the filler
            Fixtures.recv(mailbox, Fixtures.HANG); // whichever got in first
        }
    }

    /**
     * Capacity 2, full: three producers block in {@code send}; the consumer frees 2 slots in one batch
     * ({@code tryRecvMany}), then receives once more.
     */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "three parked → one batch freed 2 slots → two got in, the third stayed blocked → the next "
                    + "receive freed a slot → the third was woken and got in")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "a producer stays parked beside a free slot: the batch woke fewer waiters than it freed slots, "
                    + "or the later receive did not wake the third")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "a send threw")
    @State
    public static class TwoFreedThreeParked {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 2);

        @Actor
        public void producers() throws InterruptedException {
            final Thread second = Fixtures.sender(mailbox, 2);
            final Thread third = Fixtures.sender(mailbox, 3);
            mailbox.send(1);
            second.join();
            third.join();
        }

        @Signal
        public void consumer() {
            mailbox.tryRecvMany(m -> { }, 2); // the two fillers, one batch
            Fixtures.recv(mailbox, Fixtures.HANG);
        }
    }

    /** As {@link OneFreedTwoParked}, each party a jcstress actor (3 CPUs); the consumer receives both. */
    @JCStressTest
    @Outcome(id = "1, 1, 3", expect = ACCEPTABLE,
            desc = "both parked (or spinning) → the consumer freed 1 slot → one got in → the other stayed blocked → "
                    + "the consumer received that one, freeing the slot → the other got in → received: all in, once")
    @Outcome(expect = FORBIDDEN,
            desc = "a producer timed out or a message did not arrive: a wake-up lost, or given to a producer that "
                    + "then found no room and was not woken again")
    @State
    public static class OneFreedTwoParkedActors {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);

        @Actor
        public void producerA(III_Result r) {
            r.r1 = Fixtures.send(mailbox, 1, Fixtures.HANG);
        }

        @Actor
        public void producerB(III_Result r) {
            r.r2 = Fixtures.send(mailbox, 2, Fixtures.HANG);
        }

        @Actor
        public void consumer(III_Result r) {
            mailbox.tryRecv(); // the filler: frees 1 slot
            r.r3 = Fixtures.bit(Fixtures.recv(mailbox, Fixtures.HANG))
                    | Fixtures.bit(Fixtures.recv(mailbox, Fixtures.HANG));
        }
    }

    /** As {@link TwoFreedThreeParked}, each party a jcstress actor (4 CPUs); the consumer receives all three. */
    @JCStressTest
    @Outcome(id = "1, 1, 1, 7", expect = ACCEPTABLE,
            desc = "three parked → one batch freed 2 slots → two got in, the third stayed blocked → each later "
                    + "receive freed a slot → the third got in: all in, once")
    @Outcome(expect = FORBIDDEN,
            desc = "a producer timed out or a message did not arrive: the batch woke fewer waiters than it freed "
                    + "slots, or the third was never woken by a later receive")
    @State
    public static class TwoFreedThreeParkedActors {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 2);

        @Actor
        public void producerA(IIII_Result r) {
            r.r1 = Fixtures.send(mailbox, 1, Fixtures.HANG);
        }

        @Actor
        public void producerB(IIII_Result r) {
            r.r2 = Fixtures.send(mailbox, 2, Fixtures.HANG);
        }

        @Actor
        public void producerC(IIII_Result r) {
            r.r3 = Fixtures.send(mailbox, 3, Fixtures.HANG);
        }

        @Actor
        public void consumer(IIII_Result r) {
            mailbox.tryRecvMany(m -> { }, 2); // the two fillers, one batch
            int mask = 0;
            for (int i = 0; i < 3; i++) {
                mask |= Fixtures.bit(Fixtures.recv(mailbox, Fixtures.HANG));
            }
            r.r4 = mask;
        }
    }
}

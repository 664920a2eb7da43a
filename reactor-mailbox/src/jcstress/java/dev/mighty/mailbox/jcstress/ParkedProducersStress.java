package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
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
 * <p>Producers send with {@link Fixtures#HANG} (5 s) as the timeout and report 0 if it passed: only a lost
 * wake-up makes a healthy run wait that long. The consumer receives what the producers admit with the same
 * bound and reports the mask of the messages it got.
 */
public final class ParkedProducersStress {
    private ParkedProducersStress() {
    }

    /** Capacity 1, full: two producers block; the consumer frees 1 slot, then receives twice. */
    @JCStressTest
    @Outcome(id = "1, 1, 3", expect = ACCEPTABLE,
            desc = "both parked (or spinning) → the consumer freed 1 slot → one got in → the other stayed blocked → "
                    + "the consumer received that one, freeing the slot → the other got in → received: all in, once")
    @Outcome(expect = FORBIDDEN,
            desc = "a producer timed out or a message did not arrive: a wake-up lost, or given to a producer that "
                    + "then found no room and was not woken again")
    @State
    public static class OneFreedTwoParked {
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

    /**
     * Capacity 2, full: three producers block; the consumer frees 2 slots in one batch ({@code tryRecvMany}),
     * then receives three times.
     */
    @JCStressTest
    @Outcome(id = "1, 1, 1, 7", expect = ACCEPTABLE,
            desc = "three parked → one batch freed 2 slots → two got in, the third stayed blocked → each later "
                    + "receive freed a slot → the third got in: all in, once")
    @Outcome(expect = FORBIDDEN,
            desc = "a producer timed out or a message did not arrive: the batch woke fewer waiters than it freed "
                    + "slots, or the third was never woken by a later receive")
    @State
    public static class TwoFreedThreeParked {
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

package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.time.Duration;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Mode;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.Signal;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import dev.mighty.mailbox.Mailbox;

/**
 * A producer whose {@code send(m, timeout)} times out while the consumer frees the room it waits for: its answer
 * is the truth (false means not admitted, true means admitted), and a wake-up it received but did not use is
 * handed on to the producer parked behind it.
 */
public final class TimedSendStress {
    /** Long enough to spin and yield once or twice, short enough to run out while the consumer acts. */
    static final Duration SHORT = Duration.ofNanos(20_000);

    private TimedSendStress() {
    }

    /** Capacity 1, full: {@code send(1, 20 µs)} vs the consumer's {@code tryRecv}; r2 = message 1 received. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE,
            desc = "the consumer freed the slot before the deadline → the producer claimed it → true, and the "
                    + "message is there")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "the deadline passed first → false → nothing admitted (the slot freed later stays free)")
    @Outcome(id = "0, 1", expect = FORBIDDEN,
            desc = "timed out, yet admitted: a caller that retries would send it twice")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "reported admitted, but lost")
    @Outcome(expect = FORBIDDEN, desc = "a duplicate, or a closed answer on an open mailbox")
    @State
    public static class TimeoutVsRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);

        @Actor
        public void producer(II_Result r) {
            r.r1 = Fixtures.send(mailbox, 1, SHORT);
        }

        @Actor
        public void consumer() {
            mailbox.tryRecv(); // the filler
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r2 = Fixtures.drain(mailbox);
        }
    }

    /**
     * Capacity 1, full: the actor's {@code send(1, 1 ms)} with an untimed {@code send(2)} parked beside it (a thread
     * the actor starts and joins) vs a consumer that frees one slot, then receives the message that took it. The
     * consumer acts about 1 ms after the actor starts (jcstress's termination harness), so the deadline and the
     * wake-up race.
     */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "the timed send took the freed slot before its deadline, and the receive freed it again for "
                    + "the untimed one; or it timed out (before or after being woken) and the untimed one got the "
                    + "slot: every producer returned")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "the timed send was woken for the freed slot, timed out and did not hand the wake on: the "
                    + "untimed one stays parked beside a free slot")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "a send threw")
    @State
    public static class TimeoutHandsOn {
        static final Duration ONE_MS = Duration.ofMillis(1);
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);

        @Actor
        public void producers() throws InterruptedException {
            final Thread untimed = Fixtures.sender(mailbox, 2);
            mailbox.send(1, ONE_MS);
            untimed.join();
        }

        @Signal
        public void consumer() {
            mailbox.tryRecv(); // the filler
            Fixtures.recv(mailbox, Fixtures.HANG); // whichever got in first
        }
    }

    /**
     * As {@link TimeoutHandsOn}, each party a jcstress actor (3 CPUs), checking the answers too:
     * {@code send(1, 20 µs)} and {@code send(2, 5 s)} vs a consumer that frees one slot, then
     * receives one message; the arbiter takes the rest. r3 = mask of what was received.
     */
    @JCStressTest
    @Outcome(id = "1, 1, 3", expect = ACCEPTABLE,
            desc = "one producer took the freed slot → the consumer received it, freeing the slot → the other took "
                    + "it (the short one before its deadline): both in")
    @Outcome(id = "0, 1, 2", expect = ACCEPTABLE,
            desc = "the short send timed out (perhaps after it was woken, handing the wake on) → the long one took "
                    + "the freed slot → received")
    @Outcome(id = "1, 0, 1", expect = FORBIDDEN,
            desc = "the long send timed out although a slot was freed for it: the wake was lost")
    @Outcome(id = "0, 0, 0", expect = FORBIDDEN,
            desc = "the short one was woken, timed out and did not hand the wake on: the long one stayed parked "
                    + "beside a free slot until its timeout")
    @Outcome(expect = FORBIDDEN, desc = "an answer that does not match what was received, or a duplicate")
    @State
    public static class TimeoutHandsOnActors {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        int received;

        @Actor
        public void shortProducer(III_Result r) {
            r.r1 = Fixtures.send(mailbox, 1, SHORT);
        }

        @Actor
        public void longProducer(III_Result r) {
            r.r2 = Fixtures.send(mailbox, 2, Fixtures.HANG);
        }

        @Actor
        public void consumer() {
            mailbox.tryRecv(); // the filler
            received = Fixtures.bit(Fixtures.recv(mailbox, Fixtures.HANG));
        }

        @Arbiter
        public void arbiter(III_Result r) {
            final int rest = Fixtures.drain(mailbox);
            r.r3 = rest < 0 || (rest & received) != 0 ? -1 : rest | received;
        }
    }
}

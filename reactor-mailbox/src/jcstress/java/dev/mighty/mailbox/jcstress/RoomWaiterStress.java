package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Mode;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.Signal;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * A producer waiting for room on a full mailbox vs what makes room (a receive, a released permit) or ends the wait
 * (a close): no lost wake-up. The blocking {@code send} runs in {@code Mode.Termination}; the non-blocking
 * registration (a {@code RoomTicket}, what {@code MailboxSubscriber} uses) is checked by an arbiter.
 */
public final class RoomWaiterStress {
    private RoomWaiterStress() {
    }

    /** {@code send} on a full mailbox of 1 vs the consumer's {@code tryRecv}. */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "producer found it full → pushed itself as a waiter, re-checked, parked → consumer freed the "
                    + "slot and woke it → admitted; or the slot was freed before the producer's (re-)check")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: producer parked on a mailbox with a free slot (its re-check read the old "
                    + "consumer index and the consumer's waiter check missed its registration)")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the send threw")
    @State
    public static class SendVsRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);

        @Actor
        public void producer() throws InterruptedException {
            mailbox.send(1);
        }

        @Signal
        public void consumer() {
            mailbox.tryRecv();
        }
    }

    /** {@code send} on a mailbox of 2 full with 1 message and 1 permit vs {@code releaseReserved(1)}. */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "producer parked behind the permit → the holder released it and woke the waiters → admitted; "
                    + "or the release came before the producer's check")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: the release did not wake the parked producer; it waits with a slot free")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the send threw")
    @State
    public static class SendVsRelease {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);

        public SendVsRelease() {
            ring.reserve(1);
        }

        @Actor
        public void producer() throws InterruptedException {
            mailbox.send(1);
        }

        @Signal
        public void holder() {
            ring.releaseReserved(1);
        }
    }

    /** {@code send} on a full mailbox of 1 vs {@code close()}: the producer ends with MailboxClosedException. */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "producer parked → close set CLOSED and woke every waiter → MailboxClosedException; or it saw "
                    + "CLOSED before parking")
    @Outcome(id = "STALE", expect = FORBIDDEN, desc = "lost wake-up: the producer stays parked on a closed mailbox")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the send threw")
    @State
    public static class SendVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);

        @Actor
        public void producer() throws InterruptedException {
            try {
                mailbox.send(1);
            } catch (MailboxClosedException expected) {
                // the outcome: it returned
            }
        }

        @Signal
        public void closer() {
            mailbox.close();
        }
    }

    /** {@code roomTicket(w).await()} on a full mailbox of 1 vs {@code tryRecv}; r1 = registered, r2 = wakes. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE,
            desc = "registered and found it full → consumer freed the slot, saw the waiter → woke it")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "consumer freed the slot and looked for waiters before the registration → await() saw the "
                    + "room → false: retry now")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "registration visible to the consumer's wake, yet await() also saw the room: false plus one "
                    + "spurious wake (documented)")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
            desc = "lost wake-up: await() saw it full and registered → the consumer freed the slot and missed the "
                    + "registration → never woken")
    @Outcome(expect = FORBIDDEN, desc = "woken more than once for one registration")
    @State
    public static class AwaitRoomVsRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();

        @Actor
        public void producer(II_Result r) {
            r.r1 = ring.roomTicket(flag).await() ? 1 : 0;
        }

        @Actor
        public void consumer() {
            mailbox.tryRecv();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r2 = flag.get();
        }
    }

    /** {@code roomTicket(w).await()} on a mailbox of 2 full with 1 message and 1 permit vs {@code releaseReserved(1)}. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "registered and found it full → the release woke it")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "the release came first and found no waiter → await() saw the room → false: retry now")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "the release woke the registration and await() saw the room too: one spurious wake")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
            desc = "lost wake-up: registered and saw it full → the release missed the registration")
    @Outcome(expect = FORBIDDEN, desc = "woken more than once for one registration")
    @State
    public static class AwaitRoomVsRelease {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();

        public AwaitRoomVsRelease() {
            ring.reserve(1);
        }

        @Actor
        public void producer(II_Result r) {
            r.r1 = ring.roomTicket(flag).await() ? 1 : 0;
        }

        @Actor
        public void holder() {
            ring.releaseReserved(1);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r2 = flag.get();
        }
    }

    /** {@code roomTicket(w).await()} on a full mailbox of 1 vs {@code close()}. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "registered and found it full and open → the close woke it")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "the close emptied the waiter list first → await() saw CLOSED → false: retry now (and fail)")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "the close woke the registration and await() saw CLOSED too: one spurious wake")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "lost wake-up: registered on an open mailbox, the close missed it")
    @Outcome(expect = FORBIDDEN, desc = "woken more than once for one registration")
    @State
    public static class AwaitRoomVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();

        @Actor
        public void producer(II_Result r) {
            r.r1 = ring.roomTicket(flag).await() ? 1 : 0;
        }

        @Actor
        public void closer() {
            mailbox.close();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r2 = flag.get();
        }
    }
}

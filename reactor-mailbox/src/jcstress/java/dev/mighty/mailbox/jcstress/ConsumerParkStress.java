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
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The consumer waiting for data vs a producer publishing (or a close): no lost wake-up. The blocking forms run in
 * {@code Mode.Termination} (the consumer must return once the producer has published); the non-blocking
 * registration ({@code awaitData(Wakeable)}, what the publisher's drain uses) is checked by an arbiter.
 */
public final class ConsumerParkStress {
    private ConsumerParkStress() {
    }

    /** {@code recv()} on an empty mailbox vs {@code trySend}. */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "consumer found the message, or parked → producer published and saw it parked → woke it; or "
                    + "producer published between the consumer's registration and its re-read → it did not park")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: consumer registered → producer published without seeing the registration → "
                    + "consumer parked on a mailbox that holds a message")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the receive threw")
    @State
    public static class RecvVsSend {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);

        @Actor
        public void consumer() throws InterruptedException {
            mailbox.recv();
        }

        @Signal
        public void producer() {
            mailbox.trySend(1);
        }
    }

    /** {@code recvMany} (the batched receive) on an empty mailbox vs {@code trySendMany}. */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "consumer parked → producer published the run and signalled once → consumer woke and took it "
                    + "(or it was there before the consumer parked)")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: the run's single signal missed the parked consumer")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the receive threw")
    @State
    public static class RecvManyVsSendMany {
        static final java.util.List<Integer> RUN = java.util.List.of(1, 2);
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);

        @Actor
        public void consumer() throws InterruptedException {
            mailbox.recvMany(m -> { }, 2);
        }

        @Signal
        public void producer() {
            mailbox.trySendMany(RUN);
        }
    }

    /** {@code recv()} on an empty mailbox vs {@code close()}: the consumer sees the end. */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "consumer parked → close set CLOSED and woke it → recv() returned null (or it saw CLOSED first)")
    @Outcome(id = "STALE", expect = FORBIDDEN, desc = "lost wake-up: the close missed the parked consumer")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the receive threw")
    @State
    public static class RecvVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);

        @Actor
        public void consumer() throws InterruptedException {
            mailbox.recv();
        }

        @Signal
        public void closer() {
            mailbox.close();
        }
    }

    /** {@code awaitData(w)} on an empty mailbox vs {@code trySend}; r1 = registered, r2 = wakes. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE,
            desc = "consumer registered and saw no claim → producer published, took the registration → woke it once")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "producer claimed first → the consumer's re-read saw it → false (drain again), registration "
                    + "withdrawn before the producer looked")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "producer took the registration just before the consumer withdrew it: false and one spurious "
                    + "wake (documented)")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
            desc = "lost wake-up: registered → producer published without seeing the registration → never woken")
    @Outcome(expect = FORBIDDEN, desc = "woken more than once")
    @State
    public static class AwaitDataVsSend {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();

        @Actor
        public void consumer(II_Result r) {
            r.r1 = ring.awaitData(flag) ? 1 : 0;
        }

        @Actor
        public void producer() {
            mailbox.trySend(1);
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r2 = flag.get();
        }
    }

    /** {@code awaitData(w)} on an empty mailbox vs {@code close()}; r1 = registered, r2 = wakes. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "consumer registered → close set CLOSED → woke it once")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "close set CLOSED first → the consumer's re-read saw it → false, registration withdrawn first")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "the close took the registration just before the consumer withdrew it: one spurious wake")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "lost wake-up: registered, and the close never woke it")
    @Outcome(expect = FORBIDDEN, desc = "woken more than once")
    @State
    public static class AwaitDataVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();

        @Actor
        public void consumer(II_Result r) {
            r.r1 = ring.awaitData(flag) ? 1 : 0;
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

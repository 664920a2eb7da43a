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
import org.openjdk.jcstress.infra.results.III_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RingWaiters;

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

    /**
     * A standing registration ({@code awaitDataStanding}, what a trampolined drain keeps) made on an empty mailbox
     * vs {@code trySend}; r1 = registered, r2 = wakes. As {@link AwaitDataVsSend}: the first store is the same Dekker
     * pair.
     */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE,
            desc = "registered and saw no claim → the producer published, found the standing registration → woke it")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "producer claimed first → the re-read saw it → false, withdrawn before the producer looked")
    @Outcome(id = "0, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "the producer woke the registration just before it was withdrawn: false and one spurious wake")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
            desc = "lost wake-up: registered → producer published without seeing the registration")
    @Outcome(expect = FORBIDDEN, desc = "woken more than once")
    @State
    public static class StandingVsSend {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();
        final RingWaiters.StandingWaiter standing = new RingWaiters.StandingWaiter(flag);

        @Actor
        public void consumer(II_Result r) {
            r.r1 = ring.awaitDataStanding(standing) ? 1 : 0;
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

    /**
     * The renewal of a standing registration that is still in place (a plain read, no re-check) vs {@code trySend}:
     * the drain polls, finds nothing, renews; r1 = took the message, r2 = renewal said "registered", r3 = wakes.
     */
    @JCStressTest
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE,
            desc = "published before the poll: taken; the publish woke the owner too (a spurious pass for a drain)")
    @Outcome(id = "0, 1, 1", expect = ACCEPTABLE,
            desc = "published after the poll: the producer found the standing registration and woke the owner")
    @Outcome(id = "0, 1, 0", expect = FORBIDDEN,
            desc = "lost wake-up: the poll missed the message, the renewal said registered, nobody woke the owner")
    @Outcome(expect = FORBIDDEN, desc = "anything else (a renewal in place must not fail; one wake per publish)")
    @State
    public static class StandingRenewalVsSend {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 0);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final Fixtures.Flag flag = new Fixtures.Flag();
        final RingWaiters.StandingWaiter standing = new RingWaiters.StandingWaiter(flag);

        public StandingRenewalVsSend() {
            if (!ring.awaitDataStanding(standing)) {
                throw new IllegalStateException("an empty mailbox refused the registration");
            }
        }

        @Actor
        public void consumer(III_Result r) {
            r.r1 = ring.poll() != null ? 1 : 0;
            r.r2 = ring.awaitDataStanding(standing) ? 1 : 0;
        }

        @Actor
        public void producer() {
            mailbox.trySend(1);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r3 = flag.get();
        }
    }
}

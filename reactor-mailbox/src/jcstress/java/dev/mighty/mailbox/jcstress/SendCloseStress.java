package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * A send racing {@code close()}: linearizable. Either the send fails ({@code MailboxClosedException}, or
 * {@code false} from {@code sendReserved}) or its message is received before the end of the stream; never
 * admitted and lost, never refused and delivered.
 */
public final class SendCloseStress {
    private SendCloseStress() {
    }

    /** {@code trySend} vs {@code close()} on an empty mailbox; the arbiter drains it and checks the end. */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE,
            desc = "the send's claim CAS came before the close's CAS on the producer word → admitted → received "
                    + "before the end")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE,
            desc = "the close set CLOSED first → the send saw it → MailboxClosedException, nothing admitted")
    @Outcome(id = "1, 0", expect = FORBIDDEN, desc = "admitted, then lost: the stream ended without it")
    @Outcome(id = "-1, 1", expect = FORBIDDEN, desc = "refused with MailboxClosedException, yet delivered")
    @Outcome(expect = FORBIDDEN, desc = "a full answer on an empty mailbox, a duplicate, or no end of stream")
    @State
    public static class TrySendVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 0);

        @Actor
        public void send(II_Result r) {
            r.r1 = Fixtures.trySend(mailbox, 1);
        }

        @Actor
        public void close() {
            mailbox.close();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            final int mask = Fixtures.drain(mailbox);
            r.r2 = mailbox.isTerminated() ? mask : -2;
        }
    }

    /**
     * {@code trySend} vs a consumer that closes and then receives until the end: the consumer must not see
     * "closed and empty" while an admitted message is still in flight (claimed, not yet published).
     */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE,
            desc = "the send claimed before the close → the consumer's recv() waited for its publish (or found it) "
                    + "→ received it, then null: the end")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE,
            desc = "the close came first → MailboxClosedException → the consumer's recv() returned null at once")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
            desc = "the consumer saw closed and empty while an admitted message was in flight: lost")
    @Outcome(id = "-1, 1", expect = FORBIDDEN, desc = "refused, yet delivered")
    @Outcome(expect = FORBIDDEN, desc = "a full answer on an empty mailbox, or a duplicate")
    @State
    public static class TrySendVsCloseAndRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 0);

        @Actor
        public void send(II_Result r) {
            r.r1 = Fixtures.trySend(mailbox, 1);
        }

        @Actor
        public void closeAndReceive(II_Result r) {
            mailbox.close();
            int mask = 0;
            Integer m;
            while ((m = Fixtures.recv(mailbox, Fixtures.HANG)) != null) {
                mask = (mask & Fixtures.bit(m)) != 0 ? -1 : mask | Fixtures.bit(m);
            }
            r.r2 = mailbox.isTerminated() ? mask : -2;
        }
    }

    /** A reserved send vs {@code close()}: refused with {@code false} and its permit returned, or delivered. */
    @JCStressTest
    @Outcome(id = "1, 1, 0", expect = ACCEPTABLE,
            desc = "the reserved send claimed before the close → admitted → received; its permit spent")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE,
            desc = "the close came first → sendReserved returned false and gave its permit back")
    @Outcome(id = "1, 0, 0", expect = FORBIDDEN, desc = "admitted, then lost")
    @Outcome(id = "0, 1, 0", expect = FORBIDDEN, desc = "refused, yet delivered")
    @Outcome(expect = FORBIDDEN, desc = "a permit left behind (reserved() != 0), a throw, or a duplicate")
    @State
    public static class SendReservedVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 0);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);

        public SendReservedVsClose() {
            ring.reserve(1);
        }

        @Actor
        public void send(III_Result r) {
            r.r1 = Fixtures.sendReserved(ring, 1);
        }

        @Actor
        public void close() {
            mailbox.close();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            final int mask = Fixtures.drain(mailbox);
            r.r2 = mailbox.isTerminated() ? mask : -2;
            r.r3 = (int) ring.reserved();
        }
    }
}

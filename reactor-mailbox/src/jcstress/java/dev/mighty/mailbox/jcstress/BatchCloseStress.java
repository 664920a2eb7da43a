package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.List;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * A batched claim (one CAS for a run of slots) vs {@code close()}: the run is admitted whole before the close, or
 * refused whole after it; never a part of it.
 */
public final class BatchCloseStress {
    static final List<Integer> RUN = List.of(1, 2, 3);

    private BatchCloseStress() {
    }

    /** {@code trySendMany} of 3 on an empty mailbox of 4 vs {@code close()}; r2 = mask received. */
    @JCStressTest
    @Outcome(id = "3, 7", expect = ACCEPTABLE,
            desc = "the run's claim CAS came before the close's → all 3 admitted → all received before the end")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE,
            desc = "the close set CLOSED first → MailboxClosedException → none admitted")
    @Outcome(id = {"1, 1", "2, 3"}, expect = FORBIDDEN, desc = "part of the run admitted: split by the close")
    @Outcome(id = "3, 0", expect = FORBIDDEN, desc = "admitted, then lost: the stream ended without the run")
    @Outcome(expect = FORBIDDEN, desc = "what was received does not match the answer, or no end of stream")
    @State
    public static class TrySendManyVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 0);

        @Actor
        public void send(II_Result r) {
            try {
                r.r1 = mailbox.trySendMany(RUN);
            } catch (MailboxClosedException e) {
                r.r1 = Fixtures.CLOSED;
            }
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
     * {@code sendReservedMany} of 3 with 3 permits vs {@code close()}; r2 = mask received, r3 = permits left.
     */
    @JCStressTest
    @Outcome(id = "3, 7, 0", expect = ACCEPTABLE,
            desc = "the run's claim came before the close → all 3 admitted and received, the permits spent")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE,
            desc = "the close came first → 0, the run's 3 permits given back")
    @Outcome(id = {"1, 1, 0", "2, 3, 0"}, expect = FORBIDDEN, desc = "part of the run admitted: split by the close")
    @Outcome(expect = FORBIDDEN, desc = "permits left behind, a throw, or what was received does not match")
    @State
    public static class SendReservedManyVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 0);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);

        public SendReservedManyVsClose() {
            ring.reserve(3);
        }

        @Actor
        public void send(III_Result r) {
            try {
                r.r1 = ring.sendReservedMany(RUN, 0, 3);
            } catch (IllegalStateException e) {
                r.r1 = -3;
            }
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

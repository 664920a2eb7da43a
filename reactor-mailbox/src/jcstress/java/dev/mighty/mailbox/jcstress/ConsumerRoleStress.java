package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;
import org.openjdk.jcstress.infra.results.III_Result;

import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The consumer-role hand-over ({@code attachConsumer}/{@code detachConsumer}): never two holders; a newcomer
 * behind a cancelled holder is queued, not refused, and gets the role (woken once) when the holder detaches;
 * a newcomer behind a live holder or a live queued successor is refused; a role is handed over at most once.
 *
 * <p>Results report {@code attachConsumer}'s answer as 0 = {@code ROLE_ACQUIRED}, 1 = {@code ROLE_QUEUED},
 * 2 = {@code ROLE_REFUSED} ({@link Fixtures#role}).
 */
public final class ConsumerRoleStress {
    private ConsumerRoleStress() {
    }

    /** A cancelled holder detaching vs a newcomer attaching; r2 = the newcomer's wakes, r3 = it holds the role. */
    @JCStressTest
    @Outcome(id = "0, 0, 1", expect = ACCEPTABLE,
            desc = "the holder detached first → the newcomer found the role free and took it")
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE,
            desc = "the newcomer queued behind the cancelled holder → the detach handed it the role and woke it")
    @Outcome(id = "1, 0, 0", expect = FORBIDDEN,
            desc = "queued, and the detach missed it: nobody holds the role and the newcomer waits forever")
    @Outcome(id = "0, 1, 1", expect = FORBIDDEN, desc = "handed the role twice (acquired and also woken)")
    @Outcome(expect = FORBIDDEN, desc = "refused behind a cancelled holder, or the role lost")
    @State
    public static class AttachVsDetach {
        final MailboxRing<Integer> ring = Fixtures.ring(Fixtures.filled(2, 0));
        final Fixtures.Role holder = new Fixtures.Role();
        final Fixtures.Role newcomer = new Fixtures.Role();

        public AttachVsDetach() {
            ring.attachConsumer(holder);
            holder.cancelled = true;
        }

        @Actor
        public void attach(III_Result r) {
            r.r1 = Fixtures.role(ring.attachConsumer(newcomer));
        }

        @Actor
        public void detach() {
            ring.detachConsumer(holder);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r2 = newcomer.get();
            r.r3 = ring.consumerRole() == newcomer ? 1 : 0;
        }
    }

    /**
     * A cancelled holder detaching vs a newcomer that attaches and, if it then holds the role, ends at once and
     * gives it back (a subscriber that finds the mailbox closed and drained). r2 = it gave the role back, r3 = it
     * holds the role at the end, r4 = its wakes. Pins "a role is handed over at most once": the hand-over used to
     * be two CASes (holder, then next), and a detach between them left a stale successor that the newcomer's
     * own detach handed the role back to (docs/reliability.md, Findings: a close racing a second subscription).
     */
    @JCStressTest
    @Outcome(id = "0, 1, 0, 0", expect = ACCEPTABLE,
            desc = "the holder detached first → the newcomer took the free role, then gave it back")
    @Outcome(id = "1, 1, 0, 1", expect = ACCEPTABLE,
            desc = "queued → the detach handed it the role and woke it → it gave the role back")
    @Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE,
            desc = "queued, and not yet handed the role when it looked → the detach handed it the role and woke it")
    @Outcome(id = {"0, 1, 1, 0", "0, 1, 1, 1", "1, 1, 1, 1", "1, 1, 1, 2"}, expect = FORBIDDEN,
            desc = "handed the role again after it gave it back: nobody would ever release it")
    @Outcome(expect = FORBIDDEN, desc = "refused behind a cancelled holder, the role lost, or woken twice")
    @State
    public static class DetachVsAttachAndGiveBack {
        final MailboxRing<Integer> ring = Fixtures.ring(Fixtures.filled(2, 0));
        final Fixtures.Role holder = new Fixtures.Role();
        final Fixtures.Role newcomer = new Fixtures.Role();

        public DetachVsAttachAndGiveBack() {
            ring.attachConsumer(holder);
            holder.cancelled = true;
        }

        @Actor
        public void detach() {
            ring.detachConsumer(holder);
        }

        @Actor
        public void attachAndGiveBack(IIII_Result r) {
            r.r1 = Fixtures.role(ring.attachConsumer(newcomer));
            if (ring.consumerRole() == newcomer) {
                newcomer.cancelled = true;
                ring.detachConsumer(newcomer);
                r.r2 = 1;
            }
        }

        @Arbiter
        public void arbiter(IIII_Result r) {
            r.r3 = ring.consumerRole() == newcomer ? 1 : 0;
            r.r4 = newcomer.get();
        }
    }

    /**
     * Two newcomers behind a cancelled holder; the arbiter then detaches the holder. r3 = who holds the role
     * (1 or 2), r4 = wakes of both newcomers.
     */
    @JCStressTest
    @Outcome(id = "1, 2, 1, 1", expect = ACCEPTABLE,
            desc = "A queued first → B found a live successor queued → refused; the detach handed the role to A")
    @Outcome(id = "2, 1, 2, 1", expect = ACCEPTABLE,
            desc = "B queued first → A refused; the detach handed the role to B")
    @Outcome(id = {"1, 1, 1, 1", "1, 1, 2, 1"}, expect = FORBIDDEN,
            desc = "both queued: one successor overwrote the other, which then never gets the role")
    @Outcome(id = "2, 2, 0, 0", expect = FORBIDDEN, desc = "both refused behind a cancelled holder")
    @Outcome(expect = FORBIDDEN, desc = "a role acquired while a holder is registered, two holders, or no hand-over")
    @State
    public static class TwoBehindCancelled {
        final MailboxRing<Integer> ring = Fixtures.ring(Fixtures.filled(2, 0));
        final Fixtures.Role holder = new Fixtures.Role();
        final Fixtures.Role a = new Fixtures.Role();
        final Fixtures.Role b = new Fixtures.Role();

        public TwoBehindCancelled() {
            ring.attachConsumer(holder);
            holder.cancelled = true;
        }

        @Actor
        public void attachA(IIII_Result r) {
            r.r1 = Fixtures.role(ring.attachConsumer(a));
        }

        @Actor
        public void attachB(IIII_Result r) {
            r.r2 = Fixtures.role(ring.attachConsumer(b));
        }

        @Arbiter
        public void arbiter(IIII_Result r) {
            ring.detachConsumer(holder);
            r.r3 = ring.consumerRole() == a ? 1 : ring.consumerRole() == b ? 2 : 0;
            r.r4 = a.get() + b.get();
        }
    }

    /** Two newcomers on a free role: exactly one acquires, the other is refused. r3 = who holds it. */
    @JCStressTest
    @Outcome(id = "0, 2, 1", expect = ACCEPTABLE, desc = "A's CAS took the free role → B saw a live holder → refused")
    @Outcome(id = "2, 0, 2", expect = ACCEPTABLE, desc = "B's CAS took the free role → A refused")
    @Outcome(id = {"0, 0, 1", "0, 0, 2"}, expect = FORBIDDEN, desc = "two holders: both acquired")
    @Outcome(expect = FORBIDDEN, desc = "both refused, queued behind a live holder, or the role lost")
    @State
    public static class TwoOnFree {
        final MailboxRing<Integer> ring = Fixtures.ring(Fixtures.filled(2, 0));
        final Fixtures.Role a = new Fixtures.Role();
        final Fixtures.Role b = new Fixtures.Role();

        @Actor
        public void attachA(III_Result r) {
            r.r1 = Fixtures.role(ring.attachConsumer(a));
        }

        @Actor
        public void attachB(III_Result r) {
            r.r2 = Fixtures.role(ring.attachConsumer(b));
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r3 = ring.consumerRole() == a ? 1 : ring.consumerRole() == b ? 2 : 0;
        }
    }
}

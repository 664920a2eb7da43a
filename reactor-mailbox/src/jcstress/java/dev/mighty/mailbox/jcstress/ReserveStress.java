package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * {@code reserve(n)} racing the claims that change the room it counts. The invariant: once {@code reserve}
 * returns, occupied + reserved ≤ capacity, so a reserved send never finds the ring full.
 *
 * <p>The arbiter reports {@code grant, size() + reserved(), refused}: the grant, the occupancy the grant was added
 * to, and how many reserved sends threw (the ring full under a permit: {@code IllegalStateException} today), counting
 * the grantee's own sends, which the arbiter makes after the race.
 */
public final class ReserveStress {
    private ReserveStress() {
    }

    /**
     * Capacity 4 holding 1 message, with 2 permits held by two senders: 1 slot free. Two reserved sends race a
     * {@code reserve(4)}. A reserved send claims its slot first and returns its permit second; this is the race
     * that finds defect A (docs/reliability.md, Findings). Three actors: jcstress schedules it only on machines
     * with 3 CPUs or more; {@link VsReservedSendPair} is the same race on two.
     */
    @JCStressTest
    @Outcome(id = "1, 4, 0", expect = ACCEPTABLE,
            desc = "reserve counted the one free slot (before, between or after the sends) and got it; its "
                    + "reserved send is admitted: occupied 4 + reserved 0")
    @Outcome(id = "0, 3, 0", expect = ACCEPTABLE_INTERESTING,
            desc = "a send claimed → reserve read the index after the claim and 'reserved' before the send returned "
                    + "its permit → the slot counted twice, none free → granted 0 (conservative)")
    @Outcome(id = "2, 5, 1", expect = FORBIDDEN,
            desc = "defect A: reserve read the index → send A claimed and returned its permit → reserve read "
                    + "'reserved' (one slot counted nowhere: 2 free) → bumped the epoch → send B claimed and "
                    + "returned its permit → the re-check read 'reserved' (B in neither term) → over-grant: occupied "
                    + "3 + reserved 2 on capacity 4; the grantee's second reserved send finds the ring full")
    @Outcome(expect = FORBIDDEN, desc = "over capacity, a permit lost, or a reserved send refused")
    @State
    public static class VsTwoReservedSends {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        int grant;
        int sentA;
        int sentB;

        public VsTwoReservedSends() {
            ring.reserve(2);
        }

        @Actor
        public void sendA() {
            sentA = Fixtures.sendReserved(ring, 1);
        }

        @Actor
        public void sendB() {
            sentB = Fixtures.sendReserved(ring, 2);
        }

        @Actor
        public void reserve() {
            grant = ring.reserve(4);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r1 = grant;
            r.r2 = ring.size() + (int) ring.reserved();
            r.r3 = refused(ring, grant, sentA, sentB);
        }
    }

    /**
     * As {@link VsTwoReservedSends} with both reserved sends on one thread, back to back: the same windows, two
     * actors (which interleave better than three on a 2-CPU machine).
     */
    @JCStressTest
    @Outcome(id = "1, 4, 0", expect = ACCEPTABLE,
            desc = "reserve counted the one free slot and got it; its reserved send is admitted")
    @Outcome(id = "0, 3, 0", expect = ACCEPTABLE_INTERESTING,
            desc = "a send claimed → reserve read the index after the claim and 'reserved' before the send returned "
                    + "its permit → none free → granted 0 (conservative)")
    @Outcome(id = "2, 5, 1", expect = FORBIDDEN,
            desc = "defect A: reserve read the index → send A claimed and returned its permit → reserve read "
                    + "'reserved' → bumped the epoch → send B claimed and returned its permit → the re-check read "
                    + "'reserved' → over-grant: occupied 3 + reserved 2 on capacity 4; a reserved send finds the "
                    + "ring full")
    @Outcome(expect = FORBIDDEN, desc = "over capacity, a permit lost, or a reserved send refused")
    @State
    public static class VsReservedSendPair {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        int grant;
        int sentA;
        int sentB;

        public VsReservedSendPair() {
            ring.reserve(2);
        }

        @Actor
        public void sends() {
            sentA = Fixtures.sendReserved(ring, 1);
            sentB = Fixtures.sendReserved(ring, 2);
        }

        @Actor
        public void reserve() {
            grant = ring.reserve(4);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r1 = grant;
            r.r2 = ring.size() + (int) ring.reserved();
            r.r3 = refused(ring, grant, sentA, sentB);
        }
    }

    /** Capacity 4 holding 2 messages: two {@code reserve(3)} calls race for the 2 free slots. */
    @JCStressTest
    @Outcome(id = {"2, 0, 4", "0, 2, 4"}, expect = ACCEPTABLE,
            desc = "one reserve's CAS on 'reserved' came first and took both free slots → the other re-read and "
                    + "found none")
    @Outcome(id = {"1, 1, 4", "1, 0, 3", "0, 1, 3", "0, 0, 2"}, expect = ACCEPTABLE_INTERESTING,
            desc = "granted less than was free (conservative; not seen with these two alone)")
    @Outcome(expect = FORBIDDEN, desc = "the grants exceed the 2 free slots: occupied + reserved > capacity")
    @State
    public static class VsReserve {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 2);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);

        @Actor
        public void reserveA(III_Result r) {
            r.r1 = ring.reserve(3);
        }

        @Actor
        public void reserveB(III_Result r) {
            r.r2 = ring.reserve(3);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r3 = ring.size() + (int) ring.reserved();
        }
    }

    /** Capacity 4 holding 2 messages: a plain {@code trySend} races a {@code reserve(2)} for the 2 free slots. */
    @JCStressTest
    @Outcome(id = "1, 1, 4", expect = ACCEPTABLE,
            desc = "the send claimed first → reserve got the one slot left (directly, or its re-check after the "
                    + "epoch bump saw the claim and gave one back)")
    @Outcome(id = "0, 2, 4", expect = ACCEPTABLE,
            desc = "reserve raised 'reserved' and bumped the epoch first → the send's claim saw both slots reserved "
                    + "(or failed its CAS and re-read) → full")
    @Outcome(id = "1, 0, 3", expect = ACCEPTABLE_INTERESTING,
            desc = "reserve's re-check saw the claim and gave back more than it had to (conservative)")
    @Outcome(id = "1, 2, 5", expect = FORBIDDEN,
            desc = "the send read 'reserved' before reserve's CAS and claimed after its epoch bump without failing "
                    + "its CAS, or the re-check missed the claim: occupied 3 + reserved 2 > 4")
    @Outcome(expect = FORBIDDEN, desc = "over capacity, or the send refused while a slot was free")
    @State
    public static class VsTrySend {
        final Mailbox<Integer> mailbox = Fixtures.filled(4, 2);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);

        @Actor
        public void send(III_Result r) {
            r.r1 = Fixtures.trySend(mailbox, 1);
        }

        @Actor
        public void reserve(III_Result r) {
            r.r2 = ring.reserve(2);
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r3 = ring.size() + (int) ring.reserved();
        }
    }

    /**
     * @return how many reserved sends found the ring full: those of the racing senders (reported 2 by
     *         {@link Fixtures#sendReserved}) and those of the grantee, made now
     */
    static int refused(MailboxRing<Integer> ring, int grant, int sentA, int sentB) {
        int refused = (sentA == 2 ? 1 : 0) + (sentB == 2 ? 1 : 0);
        for (int i = 0; i < grant; i++) {
            if (Fixtures.sendReserved(ring, 3) == 2) {
                refused++;
            }
        }
        return refused;
    }
}

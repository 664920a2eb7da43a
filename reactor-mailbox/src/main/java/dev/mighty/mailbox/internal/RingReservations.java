package dev.mighty.mailbox.internal;

import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * Reservations of {@link MailboxRing}: {@code reserve(n)} grants permits for slots that later reserved sends use
 * without a room check. Static methods on the ring's fields, in their own class so the ring keeps the claim
 * protocol; not API. The Kafka receiver reserves a poll's room before it polls; the subscriber side no longer
 * reserves at all (an idle upstream's permits starved the others: docs/reliability.md).
 *
 * <h2>Threads and progress</h2>
 * Any thread; lock-free: a grant is a CAS on {@code reserved} followed by a CAS that bumps the reservation epoch in
 * the producer word, so a plain claim that read {@code reserved} before the grant fails its CAS and reads again.
 *
 * <h2>The invariant</h2>
 * Once {@code reserve} returns, occupied + reserved never exceeds the capacity on its account: the first estimate
 * may over-grant (a reserved send between its reads of the producer index and of {@code reserved} is counted in
 * neither), and the re-check after the epoch bump gives back any excess. The re-check's read order is the
 * argument; it is written next to it. jcstress pins it ({@code ReserveStress}).
 */
final class RingReservations {
    private RingReservations() {
    }

    static <E> int reserve(MailboxRing<E> ring, int n) {
        final int capacity = ring.capacity;
        while (n > 0) {
            final long word = ring.lvProducerIndex();
            if ((word & MailboxRing.CLOSED) != 0) {
                return 0;
            }
            final long r = ring.lvReserved();
            final long free = capacity - ((word >>> MailboxRing.INDEX_SHIFT) - ring.lvConsumerIndex()) - Math.max(0L, r);
            if (free <= 0) {
                return 0;
            }
            long grant = Math.min(n, free);
            if (!ring.casReserved(r, r + grant)) {
                continue;
            }
            // Bump the epoch: a producer that read 'reserved' before our CAS now fails its claim CAS and re-reads.
            long w;
            for (;;) {
                w = ring.lvProducerIndex();
                if ((w & MailboxRing.CLOSED) != 0) {
                    ring.releaseReserved(grant);
                    return 0;
                }
                if ((w & MailboxRing.EPOCH_MASK) == MailboxRing.EPOCH_MASK) {
                    break; // saturated: handled below
                }
                if (ring.casProducerIndex(w, w + MailboxRing.EPOCH_ONE)) {
                    break;
                }
            }
            if ((w & MailboxRing.EPOCH_MASK) == MailboxRing.EPOCH_MASK) {
                // 63 grants since the last claim: a further bump would wrap the epoch and could let a producer that
                // read the word 64 grants ago pass its CAS. Give the grant back, reset the epoch by claiming one
                // slot for a placeholder the consumer skips, and try again. No room for it: grant nothing; the
                // consumer's next receive makes room and wakes room waiters (RoomTicket).
                ring.releaseReserved(grant);
                final long index = ring.claim();
                if (index < 0) {
                    return 0;
                }
                ring.publishSkip(index);
                continue;
            }
            // Claims up to index(w) may have been checked without our grant: give back any excess. The order of the
            // three reads is the argument (a reserved send claims first, then returns its permit):
            //   1. 'reserved' first, 2. a fresh producer index, 3. the consumer index.
            // A reserved send that returned its permit before (1) claimed before (2): counted once, in the index. One
            // that claimed before (2) and returns its permit after (1): counted twice (conservative). One that claims
            // after (2) holds its permit at (1): counted once, in 'reserved'. None is counted zero times. A plain claim
            // after the epoch bump read 'reserved' after our grant and checked it. The consumer index only grows,
            // and what it frees is free. Reading the index before 'reserved' (as this re-check once did) missed a
            // reserved send falling between the two reads, which hid the over-grant of the first estimate.
            final long r2 = Math.max(0L, ring.lvReserved());
            final long index2 = ring.lvProducerIndex() >>> MailboxRing.INDEX_SHIFT;
            final long excess = (index2 - ring.lvConsumerIndex()) + r2 - capacity;
            if (excess > 0) {
                final long undo = Math.min(excess, grant);
                ring.releaseReserved(undo);
                grant -= undo;
            }
            return (int) grant;
        }
        return 0;
    }

    /** {@code sendReserved} after the message was checked. */
    static <E> boolean sendReserved(MailboxRing<E> ring, E msg) {
        if (ring.lvReserved() <= 0) {
            // a caller bug (a send beyond its permits): fail before claiming rather than drive 'reserved' negative
            throw new IllegalStateException("sendReserved without a reserved slot: name=" + ring.name + ", reserved="
                    + ring.lvReserved());
        }
        final long index = RunClaim.claimReserved(ring, 1, "sendReserved");
        if (index < 0) {
            return false;
        }
        ring.publishClaimed(index, msg);
        return true;
    }

    /** {@code sendReservedMany} after the run was checked ({@code n >= 1}). */
    static <E> int sendReservedMany(MailboxRing<E> ring, List<? extends E> batch, int from, int n) {
        if (ring.lvReserved() < n) {
            throw new IllegalStateException("sendReservedMany without " + n + " reserved slots: name=" + ring.name
                    + ", reserved=" + ring.lvReserved());
        }
        return RunClaim.sendReservedRun(ring, batch, from, n);
    }

    /** Removes up to {@code n} permits, never below zero. */
    static void takePermits(MailboxRing<?> ring, long n) {
        long r;
        while ((r = ring.lvReserved()) > 0 && !ring.casReserved(r, Math.max(0L, r - n))) {
            // another permit holder moved it; read again (lock-free: each failure is someone else's success)
        }
    }

    /** Returns {@code n} unused permits and wakes about {@code n} room waiters. */
    static void release(MailboxRing<?> ring, long n) {
        if (n > 0) {
            // Never below zero, even for a caller that gives back more than it holds (its own accounting broken by
            // a §1.3-breaking upstream): the count must not lie, and room checks must not over-admit.
            takePermits(ring, n);
            // StoreLoad: our release before the waiter check (the CAS may not have run); see RingWaiters
            VarHandle.fullFence();
            if (ring.waiters.mayHaveRoomWaiters()) {
                ring.waiters.wakeRoom((int) Math.min(n, Integer.MAX_VALUE));
            }
        }
    }
}

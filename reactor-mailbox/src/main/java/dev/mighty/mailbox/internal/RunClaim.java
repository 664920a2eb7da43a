package dev.mighty.mailbox.internal;

import java.util.ConcurrentModificationException;
import java.util.List;
import java.util.Objects;

/**
 * The batched and reserved claims of {@link MailboxRing} ({@code trySendMany}, {@code sendMany},
 * {@code sendReserved}, {@code sendReservedMany}): a run of messages claimed with one CAS on the producer word
 * instead of one per message. Static methods on the ring's producer-side fields; not API. With
 * {@link MailboxRing#claim()} these are the ring's three claim loops: a single plain claim (the hot path), a plain
 * run cut to the room ({@link #claimRun}), and an exact reserved run ({@link #claimReserved}).
 *
 * <h2>Threads</h2>
 * Any producer thread, as for {@link MailboxRing#trySend}. The batch (a {@code List}, an array, or a batch type of
 * the ring's own that it publishes itself, such as a {@code FrameMailbox}'s {@code FrameBatch}) belongs to the
 * caller and must not change during the call; if it does, no claimed slot is left unstored (see {@link #publishRun}).
 *
 * <h2>Progress</h2>
 * {@link #trySendRun} is lock-free, as a single claim: its CAS fails only because another producer claimed, a
 * reservation was granted or the mailbox closed. {@link #sendRunBlocking} waits for room as {@code send} does
 * ({@link RingWaiters#parkForRoom}).
 *
 * <h2>Visibility</h2>
 * As for a single send: the claim CAS, then one release store per slot in index order, then one read of
 * {@code consumerWaiter} (the claim CAS is the store of the Dekker pair with the consumer's registration, so
 * either the producer sees the waiter or the consumer sees the claimed run and does not park). Everything the
 * caller wrote before the call happens-before the consumer's receipt of each message of the run.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> the run is cut to the room seen at the claim (capacity − occupied − reserved, with the cached
 * producer limit refreshed whenever the run does not fit under it), so it may be cut shorter than the room a
 * concurrent receive is making; the caller keeps the rest.
 */
final class RunClaim {
    /** {@link #claimRun} result: the mailbox is closed. */
    static final int RUN_CLOSED = -1;

    private RunClaim() {
    }

    /**
     * Checks a run before anything is claimed: the batch, the range (as {@code List.subList} and
     * {@code Arrays.fill} do), then every element ({@code null}, then {@link MailboxRing#validate}). At most one
     * of {@code list} and {@code array} is given; neither means the caller's batch was null.
     *
     * @return the run's length
     */
    static <E> int checkRun(MailboxRing<E> ring, List<? extends E> list, E[] array, int from, int to) {
        checkRange(list != null ? list.size() : Objects.requireNonNull(array, "batch").length, from, to);
        for (int i = from; i < to; i++) {
            final E e = list != null ? list.get(i) : array[i];
            if (e == null) {
                throw new NullPointerException("batch element: index=" + i + " is null (from=" + from + ", to=" + to
                        + "): nothing was admitted");
            }
            ring.validate(e);
        }
        return to - from;
    }

    /** Checks {@code from .. to} against a batch of {@code length}, as {@code List.subList} does. */
    static void checkRange(int length, int from, int to) {
        if (from > to) {
            throw new IllegalArgumentException("from: " + from + " > to: " + to);
        }
        if (from < 0 || to > length) {
            throw new IndexOutOfBoundsException("from: " + from + ", to: " + to + " (expected: 0 <= from <= to <= "
                    + length + ")");
        }
    }

    /**
     * {@code trySendMany}: one claim of up to {@code n}; counts a run cut short once in {@code refused}. The run is
     * {@code list}, {@code array}, or else {@code own}: a batch of the ring's own kind, which it publishes itself
     * ({@link MailboxRing#publishRunElement}).
     */
    static <E> int trySendRun(MailboxRing<E> ring, List<? extends E> list, E[] array, Object own, int from, int n) {
        final int k = claimRun(ring, list, array, own, from, n);
        if (k == RUN_CLOSED) {
            throw ring.rejectClosed("trySendMany");
        }
        if (k < n) {
            ring.countRefused(); // the run was cut short, or refused whole, because it is full
        }
        return k;
    }

    /**
     * Claims up to {@code n} slots with one CAS and publishes {@code batch[from .. from + k)} into them: the
     * batched {@link MailboxRing#claim()}. The CAS validates the closed bit and the reservation epoch as a single
     * claim's does, so the run is admitted whole before a close (or a reservation's epoch bump), or not at all
     * after it.
     *
     * @return {@code k}, how many were admitted (0 when full), or {@link #RUN_CLOSED}
     */
    static <E> int claimRun(MailboxRing<E> ring, List<? extends E> list, E[] array, Object own, int from, int n) {
        final int capacity = ring.capacity;
        long limit = ring.lvProducerLimit();
        for (;;) {
            final long word = ring.lvProducerIndex();
            if ((word & MailboxRing.CLOSED) != 0) {
                return RUN_CLOSED;
            }
            final long index = word >>> MailboxRing.INDEX_SHIFT;
            // NOTE: 'reserved' after 'word', clamped at 0: as in claim().
            final long reserved = Math.max(0L, ring.lvReserved());
            long room = limit - index - reserved;
            if (room < n) {
                // pairs with soConsumerIndex in poll(): the slots we may claim have been freed by the consumer
                final long cIndex = ring.lvConsumerIndex();
                limit = cIndex + capacity;
                ring.sampleOccupancy(index - cIndex);
                room = limit - index - reserved;
                if (room <= 0) {
                    return 0;
                }
                ring.soProducerLimit(limit); // NOTE: may overwrite a newer limit with an older one: only conservative
            }
            final int k = (int) Math.min(n, room);
            if (ring.casProducerIndex(word, (index + k) << MailboxRing.INDEX_SHIFT)) {
                publishRun(ring, list, array, own, from, index, k);
                return k;
            }
        }
    }

    /**
     * {@code sendReservedMany}: claims {@code n} slots with one CAS without the reservation check (the caller's
     * {@code n} permits are the room, as in {@link MailboxRing#sendReserved}), then returns the permits with one
     * update and publishes the run. On a closed mailbox the permits are given back and producers woken.
     *
     * @return {@code n}, or 0 if the mailbox is closed
     */
    static <E> int sendReservedRun(MailboxRing<E> ring, List<? extends E> list, int from, int n) {
        final long index = claimReserved(ring, n, "sendReservedMany");
        if (index < 0) {
            return 0;
        }
        publishRun(ring, list, null, null, from, index, n);
        return n;
    }

    /**
     * The reserved claim of {@code sendReserved} and {@code sendReservedMany}: claims exactly {@code n} slots with one
     * CAS and no reservation check (the caller's {@code n} permits are the room), then takes the {@code n} permits
     * with one update. On a closed mailbox the permits are given back (never below zero: a caller without them, an
     * upstream breaking §1.3, must not make the count lie); the close woke every room waiter.
     *
     * @return the first claimed index, or {@link MailboxRing#CLAIM_CLOSED}
     * @throws ReservationInvariantException if {@code n} slots are not free although permits are outstanding
     */
    static <E> long claimReserved(MailboxRing<E> ring, int n, String op) {
        final int capacity = ring.capacity;
        long limit = ring.lvProducerLimit();
        for (;;) {
            final long word = ring.lvProducerIndex();
            if ((word & MailboxRing.CLOSED) != 0) {
                ring.takePermits(n);
                ring.xaddRejectedClosed(1L);
                return MailboxRing.CLAIM_CLOSED;
            }
            final long index = word >>> MailboxRing.INDEX_SHIFT;
            if (index + n > limit) {
                limit = ring.lvConsumerIndex() + capacity; // pairs with soConsumerIndex in poll()
                if (index + n > limit) {
                    throw new ReservationInvariantException(op + " found no room for " + n + " reserved slots with "
                            + "permits outstanding (an over-grant, or a caller spending permits it does not hold): name="
                            + ring.name + ", capacity=" + capacity + ", reserved=" + ring.lvReserved()
                            + ", size=" + ring.size());
                }
                ring.soProducerLimit(limit);
            }
            if (ring.casProducerIndex(word, (index + n) << MailboxRing.INDEX_SHIFT)) {
                // NOTE: the run counts as occupied and as reserved until this update: only conservative. Decrement-if-
                // positive: callers racing without permits must not drive the count below zero; the permit holder they
                // robbed then finds the ring full and gets the exception above.
                ring.takePermits(n);
                return index;
            }
        }
    }

    /**
     * Publishes the claimed slots {@code index .. index + k} in order, then wakes the consumer once. A claimed slot
     * is never left unpublished: if the batch changed under us (an element now null, a {@code get} that throws),
     * the rest of the run becomes placeholders the consumer skips, and the exception is thrown after.
     */
    private static <E> void publishRun(MailboxRing<E> ring, List<? extends E> list, E[] array, Object own, int from,
            long index, int k) {
        int i = 0;
        try {
            if (own != null) {
                for (; i < k; i++) {
                    ring.publishRunElement(own, from + i, index + i);
                }
            } else if (array != null) {
                for (; i < k; i++) {
                    ring.publishQuiet(index + i, checkUnchanged(array[from + i], from + i));
                }
            } else {
                for (; i < k; i++) {
                    ring.publishQuiet(index + i, checkUnchanged(list.get(from + i), from + i));
                }
            }
        } finally {
            for (; i < k; i++) {
                ring.publishSkip(index + i);
            }
            ring.signalConsumer();
        }
    }

    private static <E> E checkUnchanged(E e, int i) {
        if (e == null) {
            throw new ConcurrentModificationException("batch element: index=" + i + " became null while it was "
                    + "being sent; the elements before it were admitted");
        }
        return e;
    }

    /** The blocking loop of {@code sendMany}: claims runs until {@code n} are in, parking while full. */
    static <E> int sendRunBlocking(MailboxRing<E> ring, List<? extends E> list, E[] array, Object own, int from,
            int n, long deadline) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        int sent = 0;
        boolean woken = false;
        for (int step = 0; sent < n; step++) {
            final int k = claimRun(ring, list, array, own, from + sent, n - sent);
            if (k > 0) {
                sent += k;
                step = -1; // progress: a fresh back-off for the rest of the run, as a new send would have
                if (woken) {
                    ring.waiters.propagate(ring);
                    woken = false;
                }
                continue;
            }
            if (k == RUN_CLOSED) {
                return closedDuringRun(ring, sent);
            }
            ring.checkNotSelfBlocking(deadline, "sendMany", sent, n);
            final int waited;
            try {
                waited = ring.waiters.parkForRoom(ring, step, woken, deadline);
            } catch (InterruptedException e) {
                if (sent == 0) {
                    throw e;
                }
                Thread.currentThread().interrupt(); // part of the run is in: report it, and keep the interrupt
                return sent;
            }
            if (waited == RingWaiters.TIMED_OUT) {
                ring.countRefused();
                return sent;
            }
            woken |= waited == RingWaiters.RETRY_WOKEN;
        }
        return sent;
    }

    /** The mailbox closed before the rest of a blocking run was admitted: throws if none was, else counts. */
    private static int closedDuringRun(MailboxRing<?> ring, int sent) {
        if (sent == 0) {
            throw ring.rejectClosed("sendMany");
        }
        ring.xaddRejectedClosed(1L);
        return sent;
    }
}

package dev.mighty.mailbox.jcstress;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.ConsumerRole;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.Wakeable;

/**
 * What the stress tests share: small prefilled mailboxes, a wake counter, a consumer role, and the receive-side
 * bookkeeping. Messages are small {@code Integer}s (cached boxes), so a test allocates nothing in its actors.
 * Message {@code m} stands for bit {@code 1 << (m - 1)} in the masks the tests report; prefilled messages are
 * {@link #FILLER} and are not in any mask.
 */
final class Fixtures {
    /** What prefilled slots hold. */
    static final Integer FILLER = 100;
    /** A wait that only a lost wake-up exhausts; a timed-out wait is reported as a forbidden outcome. */
    static final Duration HANG = Duration.ofSeconds(5);
    /** What a timed send reports on {@code MailboxClosedException}. */
    static final int CLOSED = -1;

    private Fixtures() {
    }

    /** @return an MPSC mailbox of {@code capacity} holding {@code n} fillers */
    static Mailbox<Integer> filled(int capacity, int n) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(capacity);
        for (int i = 0; i < n; i++) {
            if (!mailbox.trySend(FILLER)) {
                throw new AssertionError("capacity " + capacity + " refused filler " + i);
            }
        }
        return mailbox;
    }

    /** @return the adapter hooks of {@code mailbox} */
    static MailboxRing<Integer> ring(Mailbox<Integer> mailbox) {
        return MailboxRing.of(mailbox);
    }

    /**
     * @return 1 if the reserved send of {@code m} was admitted, 0 if refused (closed), 2 if it threw: today an
     *         {@code IllegalStateException} when the ring is full under a permit; any exception or assertion error
     *         counts, whatever type that invariant failure is given
     */
    static int sendReserved(MailboxRing<Integer> ring, Integer m) {
        try {
            return ring.sendReserved(m) ? 1 : 0;
        } catch (RuntimeException | AssertionError e) {
            return 2;
        }
    }

    /**
     * @return an {@code attachConsumer} result as the number the role tests report: 0 acquired, 1 queued, 2 refused
     *         (9 for anything else), independent of the constants' values
     */
    static int role(int attachResult) {
        if (attachResult == MailboxRing.ROLE_ACQUIRED) {
            return 0;
        }
        if (attachResult == MailboxRing.ROLE_QUEUED) {
            return 1;
        }
        return attachResult == MailboxRing.ROLE_REFUSED ? 2 : 9;
    }

    /** @return 1 if admitted, 0 if full, {@link #CLOSED} if closed */
    static int trySend(Mailbox<Integer> mailbox, Integer m) {
        try {
            return mailbox.trySend(m) ? 1 : 0;
        } catch (MailboxClosedException e) {
            return CLOSED;
        }
    }

    /** @return 1 if admitted within {@code timeout}, 0 on timeout, {@link #CLOSED} if closed */
    static int send(Mailbox<Integer> mailbox, Integer m, Duration timeout) {
        try {
            return mailbox.send(m, timeout) ? 1 : 0;
        } catch (MailboxClosedException e) {
            return CLOSED;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -2;
        }
    }

    /**
     * Starts a daemon thread that blocks in {@code send(m)} (for a {@code Mode.Termination} actor that needs more
     * parked producers than a 2-CPU machine gives jcstress actors). Join it to wait for its admission.
     */
    static Thread sender(Mailbox<Integer> mailbox, Integer m) {
        final Thread t = new Thread(() -> {
            try {
                mailbox.send(m);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "sender-" + m);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /**
     * Waits (at most {@link #HANG}) until {@code t} is parked in the mailbox's room queue, so that the order of the
     * parked senders is the order they were started in.
     */
    static void awaitParked(Thread t, Mailbox<Integer> mailbox) {
        final Object blocker = ring(mailbox);
        final long deadline = System.nanoTime() + HANG.toNanos();
        while (java.util.concurrent.locks.LockSupport.getBlocker(t) != blocker && System.nanoTime() - deadline < 0) {
            Thread.onSpinWait();
        }
    }

    /** @return the mask of {@code m} (0 for null and fillers) */
    static int bit(Integer m) {
        return m == null || m.equals(FILLER) ? 0 : 1 << (m - 1);
    }

    /** @return the mask of what {@code tryRecv} finds now; {@code -1} if a message came twice */
    static int drain(Mailbox<Integer> mailbox) {
        int mask = 0;
        Integer m;
        while ((m = mailbox.tryRecv()) != null) {
            final int bit = bit(m);
            if ((mask & bit) != 0) {
                return -1;
            }
            mask |= bit;
        }
        return mask;
    }

    /** @return a timed receive, or null on timeout, end of stream or interrupt */
    static Integer recv(Mailbox<Integer> mailbox, Duration timeout) {
        try {
            return mailbox.recv(timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** A registration for {@code awaitData} or a room ticket: counts its wakes. */
    static final class Flag extends AtomicInteger implements Wakeable {
        private static final long serialVersionUID = 1L;

        @Override
        public void wake() {
            incrementAndGet();
        }
    }

    /** A consumer role: cancelled or not, counts the hand-overs it is woken for. */
    static final class Role extends AtomicInteger implements ConsumerRole {
        private static final long serialVersionUID = 1L;

        volatile boolean cancelled;

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public void wake() {
            incrementAndGet();
        }
    }
}

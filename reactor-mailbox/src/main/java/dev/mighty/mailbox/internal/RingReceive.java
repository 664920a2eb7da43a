package dev.mighty.mailbox.internal;

import java.util.function.Consumer;

import dev.mighty.mailbox.MailboxClosedException;

/**
 * The receive loops of {@link MailboxRing} ({@code recv}, {@code tryRecvMany}, {@code recvMany}), the consumer mark
 * and the end-of-stream check: static methods on the ring, in their own class so the ring keeps the claim protocol.
 * Consumer only (one consumer at a time); progress and visibility as the ring's class comment says.
 */
final class RingReceive {
    private RingReceive() {
    }

    /** {@code recv}: polls, and waits for data (see {@link RingWaiters}) until a message, the end, or the deadline. */
    static <E> E recv(RingReceiver<E> ring, long deadline) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        for (;;) {
            final E e = ring.poll();
            if (e != null) {
                ring.afterReceive(1);
                return e;
            }
            if (ring.endOfStream() || !ring.awaitData(deadline)) {
                return null;
            }
        }
    }

    /** {@code recvMany}: a batch, after waiting for data while the mailbox is empty and open. */
    static <E> int recvMany(RingReceiver<E> ring, Consumer<? super E> sink, int max) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (max == 0) {
            return 0;
        }
        for (;;) {
            final int n = drain(ring, sink, max);
            if (n > 0 || ring.endOfStream()) {
                return n;
            }
            ring.awaitData(RingReceiver.NO_DEADLINE);
        }
    }

    /** {@code tryRecvMany}: up to {@code max} published messages, then one {@code afterReceive} for the batch. */
    static <E> int drain(RingReceiver<E> ring, Consumer<? super E> sink, int max) {
        final Thread previous = enterConsumer(ring);
        int n = 0;
        try {
            E e;
            while (n < max && (e = ring.poll()) != null) {
                n++;
                sink.accept(e);
            }
        } finally {
            ring.exitConsumer(previous);
            if (n > 0) {
                ring.afterReceive(n);
            }
        }
        return n;
    }

    /** Marks the current thread as the consumer for a batch; see {@link RingReceiver#enterConsumer()}. */
    static Thread enterConsumer(RingReceiver<?> ring) {
        final Thread self = Thread.currentThread();
        final Thread previous = ring.lpConsumerThread();
        if (previous != null && previous != self) {
            // NOTE: best effort, at no cost: the field is plain, so two racing consumers may miss each other, but a
            // consumer that finds another thread's mark knows the one-consumer rule is broken.
            throw new IllegalStateException("two consumers at once: " + self.getName() + " entered a receive while "
                    + previous.getName() + " is in one: name=" + ring.name);
        }
        ring.spConsumerThread(self);
        return previous;
    }

    /** See {@link RingReceiver#endOfStream()}. */
    static boolean endOfStream(RingReceiver<?> ring) {
        // NOTE: the close state is set before the CLOSED bit and lives on the read-mostly signals line: while the
        // mailbox is open this check leaves the producer word's line alone (see RingWaiters.awaitData).
        if (!ring.closing()) {
            return false;
        }
        final long word = ring.lvProducerIndex();
        if (!RingReceiver.isClosed(word) || RingReceiver.indexOf(word) != ring.lvConsumerIndex()) {
            return false;
        }
        final Throwable cause = ring.closeCause();
        if (cause != null) {
            throw new MailboxClosedException("mailbox closed exceptionally and drained: name=" + ring.name, cause);
        }
        return true;
    }
}

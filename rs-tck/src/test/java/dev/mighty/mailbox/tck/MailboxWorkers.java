package dev.mighty.mailbox.tck;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;

/**
 * The mailboxes a verification creates, and the producer and consumer threads that feed or drain them; all of them
 * closed and stopped by {@link #stopAll()} after each test, so no thread outlives its test.
 *
 * <h2>Threads</h2>
 * {@link #track}, {@link #fill} and {@link #drain} are called by the TestNG thread; the threads they start touch
 * only their own mailbox. {@link #stopAll()} closes every mailbox (a parked {@code send} or {@code recvMany} then
 * returns or throws {@link MailboxClosedException}), interrupts the threads and joins them with a timeout.
 */
final class MailboxWorkers {
    private static final long JOIN_TIMEOUT_MILLIS = 2_000;
    private static final int DRAIN_BATCH = 64;
    private static final AtomicInteger THREAD_IDS = new AtomicInteger();

    /** How {@link #fill} produces the elements. */
    enum Feed {
        /**
         * Sent by the caller before the publisher is even created, and the mailbox closed, when they fit in it; so
         * the subscription finds data present and "closed" already set. Otherwise as {@link #LIVE}.
         */
        UP_FRONT,
        /**
         * Always sent by a producer thread, racing the subscription: it may find the mailbox empty, wait for a
         * producer's wake-up on the empty&rarr;non-empty edge, and see the close arrive from the producer thread.
         */
        LIVE
    }

    /** Sends the element with the given index: parking while full when {@code park}, else once. */
    @FunctionalInterface
    interface Sender {
        /** @return whether the element was admitted; always true when {@code park} */
        boolean send(long index, boolean park) throws InterruptedException;
    }

    private final List<Mailbox<?>> mailboxes = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    /** Only closes {@code mailbox} in {@link #stopAll()}. */
    <M extends Mailbox<?>> M track(M mailbox) {
        synchronized (this) {
            mailboxes.add(mailbox);
        }
        return mailbox;
    }

    /**
     * Makes {@code mailbox} deliver exactly {@code elements} elements, then end: sent now and the mailbox closed
     * ({@link Feed#UP_FRONT}, when they fit), or by a producer thread that parks while the mailbox is full, then
     * closes it. A producer of {@code Integer.MAX_VALUE} elements (§3.17) effectively runs until {@link #stopAll()}.
     */
    <M extends Mailbox<?>> M fill(M mailbox, long elements, Feed feed, Sender sender) {
        track(mailbox);
        if (feed == Feed.UP_FRONT && elements <= mailbox.capacity()) {
            try {
                for (long i = 0; i < elements; i++) {
                    if (!sender.send(i, false)) {
                        throw new IllegalStateException("mailbox full at index=" + i + ", capacity="
                                + mailbox.capacity());
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while filling a mailbox that has room", e);
            }
            mailbox.close();
            return mailbox;
        }
        start("tck-producer-", () -> {
            try {
                for (long i = 0; i < elements; i++) {
                    sender.send(i, true);
                }
                mailbox.close();
            } catch (MailboxClosedException | InterruptedException stopped) {
                // stopAll() closed the mailbox or interrupted us: the test is over
            }
        });
        return mailbox;
    }

    /** An MPSC mailbox of {@link Tck#CAPACITY} that delivers {@code 0 .. elements-1}, then ends; see {@link #fill}. */
    Mailbox<Long> longs(long elements, Feed feed) {
        final Mailbox<Long> mailbox = Mailboxes.bounded(Tck.CAPACITY);
        return fill(mailbox, elements, feed, (index, park) -> {
            if (park) {
                mailbox.send(index);
                return true;
            }
            return mailbox.trySend(index);
        });
    }

    /** An MPSC mailbox of {@link Tck#CAPACITY}, closed exceptionally before anyone receives from it. */
    static <T> Mailbox<T> failed() {
        final Mailbox<T> mailbox = Mailboxes.bounded(Tck.CAPACITY);
        mailbox.closeExceptionally(new RuntimeException("closed exceptionally before subscribe (TCK)"));
        return mailbox;
    }

    /**
     * Starts a consumer thread that receives and discards everything until the mailbox is closed and drained, as the
     * mailbox's owner would, so that a {@code MailboxSubscriber} writing into it keeps finding room.
     */
    <M extends Mailbox<?>> M drain(M mailbox) {
        track(mailbox);
        start("tck-consumer-", () -> {
            try {
                while (mailbox.recvMany(m -> { }, DRAIN_BATCH) > 0) {
                    // discard
                }
            } catch (MailboxClosedException | InterruptedException end) {
                // closed exceptionally (onError) or stopAll(): either way, done
            }
        });
        return mailbox;
    }

    /** Closes every mailbox, stops every thread; safe to call more than once. */
    void stopAll() throws InterruptedException {
        final List<Mailbox<?>> mailboxes;
        final List<Thread> threads;
        synchronized (this) {
            mailboxes = new ArrayList<>(this.mailboxes);
            threads = new ArrayList<>(this.threads);
            this.mailboxes.clear();
            this.threads.clear();
        }
        for (Mailbox<?> mailbox : mailboxes) {
            mailbox.close();
        }
        for (Thread thread : threads) {
            thread.interrupt();
        }
        for (Thread thread : threads) {
            thread.join(JOIN_TIMEOUT_MILLIS);
            if (thread.isAlive()) {
                throw new IllegalStateException(thread.getName() + " did not stop within " + JOIN_TIMEOUT_MILLIS
                        + " ms of its mailbox being closed");
            }
        }
    }

    private void start(String prefix, Runnable body) {
        final Thread thread = new Thread(body, prefix + THREAD_IDS.incrementAndGet());
        thread.setDaemon(true);
        synchronized (this) {
            threads.add(thread);
        }
        thread.start();
    }
}

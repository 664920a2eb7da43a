package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.StressSeed;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.SignalType;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The mailbox driven the way {@code KafkaMailboxReceiver} drives it, without a broker. The producer is a poll
 * thread: it holds reservations ({@code ring.reserve}) for a whole poll before it "polls", sends each poll's records
 * as one reserved run ({@code ring.sendReservedMany}), carries a poll larger than its permits over to the next
 * pass (reserving again as room comes), and, without room, registers a {@link Wakeable} with {@code ring.awaitRoom}
 * and parks until it is woken. Unlike the receiver it never wakes by itself (the receiver also wakes every
 * {@code pollTimeout} for group liveness, which would hide a lost wake-up), so a lost room wake-up is a stall. The
 * consumer is the fused {@code MailboxFlux} through {@code publishOn}, as {@code receive()} subscribes it, with
 * random demand, random pauses in {@code onNext}, cancels from inside {@code onNext} and from another thread, and
 * resubscriptions.
 *
 * <p>What must hold under every interleaving: each message is taken from the mailbox exactly once and in order
 * (handed to {@code onNext}, or, when a cancel from another thread lands between {@code publishOn}'s poll and its
 * cancelled check, discarded by {@code publishOn}: at most one per such cancel, and seen by the discard hook); the
 * producer's permits all come back; and the whole thing never stops moving ({@link Hang#awaitProgress}). Every
 * {@code publishOn} of a run shares one worker thread, so deliveries and discards of successive subscriptions are
 * serial and their order is checkable.
 */
@Timeout(300)
class ReceiverShapedStallTest {
    private static final long SEED = Long.getLong("mailbox.stress.seed", 20L);

    @Test
    void shouldTakeEveryRecordOnceInOrderWhenAReservingPollerFeedsAChurningFusedPublishOn() throws Exception {
        final SplittableRandom random = new SplittableRandom(SEED);
        for (int round = 0; round < 6; round++) {
            run(random, 20_000, round % 3 == 2);
        }
    }

    @Tag("stress")
    @Test
    void shouldTakeEveryRecordOnceInOrderWhenAReservingPollerFeedsAChurningFusedPublishOnForLong()
            throws Exception {
        final SplittableRandom random = new SplittableRandom(StressSeed.of("ReceiverShapedStallTest"));
        for (int round = 0; round < 20; round++) {
            run(random, 250_000, random.nextInt(3) == 0);
        }
    }

    /**
     * @param overshoot whether {@code max.poll.records} may exceed the capacity (a user value: the poller then waits
     *        for an empty mailbox and carries a poll's overshoot over to later passes); else at most the capacity,
     *        the receiver's default
     */
    private static void run(SplittableRandom random, long total, boolean overshoot) throws Exception {
        final int capacity = 2 << random.nextInt(7); // 2 .. 128
        final int maxPoll = overshoot ? capacity + 1 + random.nextInt(capacity) : 1 + random.nextInt(capacity);
        final Mailbox<Long> mailbox = Mailboxes.bounded(capacity);
        final Books books = new Books();
        final Poller poller = new Poller(mailbox, total, maxPoll, random.split());
        final Scheduler worker = Schedulers.newSingle("receiver-shaped-worker", true);
        final Churn churn = new Churn(mailbox, worker, books, random.split());
        final String what = "capacity " + capacity + ", max.poll " + maxPoll + ", " + total + " records";
        try {
            poller.thread.start();
            churn.thread.start();
            // a failed side ends the wait at once (its failure is asserted below), a stalled one after Hang.TIMEOUT
            Hang.awaitProgress(() -> poller.failures.isEmpty() && churn.failures.isEmpty() ? books.taken.get()
                    : Long.MAX_VALUE, total, "records taken (" + what + ")",
                    () -> "stats=" + mailbox.stats() + " reserved=" + poller.ring.reserved() + " " + poller
                            + " " + churn + " " + books);
        } finally {
            poller.stop = true;
            churn.stop = true;
            LockSupport.unpark(poller.thread);
            poller.thread.join(Hang.TIMEOUT.toMillis());
            churn.thread.join(Hang.TIMEOUT.toMillis());
        }
        assertThat(poller.thread.isAlive()).as("the poller ended").isFalse();
        assertThat(churn.thread.isAlive()).as("the churn ended").isFalse();
        assertThat(poller.failures).as(what).isEmpty();
        assertThat(churn.failures).as(what).isEmpty();
        assertThat(books.violations).as(what).isEmpty();
        assertThat(books.taken.get()).as(what).isEqualTo(total);
        assertThat(books.discarded).as("discards (%s), external cancels %s", what, churn.externalCancels)
                .isLessThanOrEqualTo(churn.externalCancels);
        assertThat(poller.ring.reserved()).as("permits left (%s)", what).isZero();
        // nothing left, and a subscriber after the close sees the end at once
        mailbox.close();
        assertThat(MailboxFlux.from(mailbox).collectList().block(Hang.TIMEOUT)).as(what).isEmpty();
        worker.dispose();
    }

    static String trace(Throwable t) {
        final java.io.StringWriter out = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(out));
        return out.toString();
    }

    /**
     * The poll thread's side of {@code KafkaMailboxReceiver}: the same internal calls in the same order.
     * Single-threaded except for {@link #roomWaiting}, which the wake-up clears on the consumer's thread.
     */
    static final class Poller implements Runnable {
        final Thread thread = new Thread(this, "receiver-shaped-poller");
        final MailboxRing<Long> ring;
        final List<String> failures = new CopyOnWriteArrayList<>();
        private final long total;
        private final int maxPoll;
        /** The receiver's {@code pollThreshold}: {@code min(max.poll.records, capacity)}. */
        private final int pollThreshold;
        private final SplittableRandom random;
        private final List<Long> batch = new ArrayList<>();
        /** Set by the wake-up's thread; the only exit from {@link #parkForRoom()}. */
        private final RoomTicket ticket;
        private volatile boolean roomWaiting;
        volatile boolean stop;
        // ---- poller thread only (read racily by toString for the diagnostics)
        private long polled;
        private long pendingTo;
        private int permits;
        private volatile long parks;
        private volatile String phase = "new";

        Poller(Mailbox<Long> mailbox, long total, int maxPoll, SplittableRandom random) {
            this.ring = MailboxRing.of(mailbox);
            this.total = total;
            this.maxPoll = maxPoll;
            this.pollThreshold = Math.min(maxPoll, ring.capacity());
            this.random = random;
            final Thread self = thread;
            this.ticket = ring.roomTicket(() -> {
                roomWaiting = false;
                LockSupport.unpark(self);
            });
        }

        @Override
        public void run() {
            try {
                while (!stop && (polled < total || pendingTo > 0)) {
                    final boolean flushed = drainPending();
                    if (flushed && polled < total && reserveForPoll()) {
                        poll();
                    } else if (awaitingRoom()) {
                        parkForRoom();
                    }
                }
                drainPending();
            } catch (Throwable t) {
                failures.add("poller: " + trace(t));
            } finally {
                ticket.withdraw(); // the poller's wait is over: a wake-up that came too late is handed on
                if (permits > 0) {
                    ring.releaseReserved(permits); // as the receiver's finish()
                    permits = 0;
                }
                phase = "done";
            }
        }

        /** A poll: up to {@code max.poll.records} new records, pending until they are sent. */
        private void poll() {
            phase = "poll";
            pause();
            final long n = Math.min(1 + random.nextInt(maxPoll), total - polled);
            pendingTo = polled + n; // records polled .. pendingTo - 1 are pending
            drainPending();
        }

        /** The receiver's drainPending: as far as the permits go, reserving more as it goes; one run per pass. */
        private boolean drainPending() {
            phase = "drain";
            boolean flushed = true;
            while (polled < pendingTo) {
                if (permits == 0 && (permits = reserve(ring.capacity())) == 0) {
                    flushed = false;
                    break;
                }
                final int n = (int) Math.min(permits, pendingTo - polled);
                for (int i = 0; i < n; i++) {
                    batch.add(polled++);
                }
                permits -= n;
            }
            if (polled == pendingTo) {
                pendingTo = 0;
            }
            if (!batch.isEmpty()) {
                final int size = batch.size();
                final int sent = ring.sendReservedMany(batch, 0, size);
                batch.clear();
                if (sent != size) {
                    throw new AssertionError("a reserved run of " + size + " was refused (" + sent + " sent)");
                }
            }
            return flushed;
        }

        /** The receiver's reserveForPoll. */
        private boolean reserveForPoll() {
            if (permits < pollThreshold) {
                permits += reserve(ring.capacity() - permits);
            }
            return permits >= pollThreshold;
        }

        /** Reserves up to {@code n}; room it got spends a wake-up its ticket held (the token rule). */
        private int reserve(int n) {
            final int got = ring.reserve(n);
            if (got > 0) {
                ticket.claimed();
            }
            return got;
        }

        /**
         * The receiver's awaitingRoom: registers once per wake-up. A registration that found room on its re-check
         * (false) was withdrawn and will not fire (unless a waker took it first): the flag is cleared so the next
         * wait registers again.
         *
         * <p>NOTE: here this differs from {@code KafkaMailboxReceiver.awaitingRoom()} as of this test's commit,
         * which leaves {@code roomWaiting} set when {@code awaitRoom} returns false: no wake-up then comes, every
         * later wait finds the flag set and registers nothing, and only the receiver's timed liveness park
         * ({@code pollTimeout}) moves it on. With that code here (an untimed park) this test stalls within
         * seconds ({@code roomWaiting=true}, the mailbox empty, fewer permits than a poll needs).
         *
         * @return false if there is room now (do not park)
         */
        private boolean awaitingRoom() {
            phase = "await-room";
            if (roomWaiting) {
                return true; // registered, not yet woken
            }
            roomWaiting = true; // before the registration: a wake-up that follows it clears the flag
            if (!ticket.await()) {
                roomWaiting = false;
                return false;
            }
            return true;
        }

        /** Parks until the wake-up clears the flag: no timed retry, so a lost wake-up stalls. */
        private void parkForRoom() {
            phase = "parked";
            parks++;
            while (roomWaiting && !stop) {
                LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(50)); // only to see 'stop'
            }
        }

        private void pause() {
            final int p = random.nextInt(64);
            if (p == 0) {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(1 + random.nextInt(200)));
            } else if (p < 4) {
                Thread.yield();
            }
        }

        @Override
        public String toString() {
            return "poller{phase=" + phase + " polled=" + polled + " pendingTo=" + pendingTo + " permits=" + permits
                    + " roomWaiting=" + roomWaiting + " parks=" + parks + "}";
        }
    }

    /**
     * Subscribes fused {@code publishOn} pipelines one after another on the shared worker: random prefetch and
     * demand, random pauses, a cancel from inside {@code onNext} after a random count, or a dispose from this
     * thread after a random wait.
     */
    static final class Churn implements Runnable {
        final Thread thread = new Thread(this, "receiver-shaped-churn");
        final List<String> failures = new CopyOnWriteArrayList<>();
        private final Mailbox<Long> mailbox;
        private final Scheduler worker;
        private final Books books;
        private final SplittableRandom random;
        volatile boolean stop;
        volatile long subscriptions;
        volatile long externalCancels;

        Churn(Mailbox<Long> mailbox, Scheduler worker, Books books, SplittableRandom random) {
            this.mailbox = mailbox;
            this.worker = worker;
            this.books = books;
            this.random = random;
        }

        @Override
        public void run() {
            try {
                while (!stop) {
                    final int prefetch = new int[] {1, 4, 32, 256}[random.nextInt(4)];
                    final long cancelAfter = random.nextInt(3) == 0 ? Long.MAX_VALUE
                            : 1 + random.nextInt(random.nextBoolean() ? 16 : 1_000);
                    final Consumer consumer = new Consumer(books, random.split(), cancelAfter);
                    MailboxFlux.from(mailbox)
                            .publishOn(worker, prefetch)
                            .doOnDiscard(Long.class, books::discard)
                            .subscribe(consumer);
                    subscriptions++;
                    final int w = random.nextInt(8);
                    final long waitMicros = w == 0 ? 0 : random.nextInt(w < 4 ? 200 : w < 7 ? 5_000 : 20_000);
                    if (!consumer.ended.await(waitMicros, TimeUnit.MICROSECONDS)) {
                        externalCancels++; // counted before: a discard it causes is never seen ahead of it
                        consumer.dispose();
                        // NOTE: a dispose racing the consumer's own cancel (inside onNext, on the worker) returns
                        // as soon as the other side won BaseSubscriber's terminate, before that side has cancelled
                        // upstream: the mailbox still has a live subscriber, and subscribing now would be refused
                        // (as documented). The end hook runs after the upstream cancel, whichever side won.
                        Hang.await(consumer.ended, "the consumer's cancel");
                    }
                    if (consumer.error != null) {
                        failures.add("onError: " + trace(consumer.error));
                        return;
                    }
                }
            } catch (Throwable t) {
                failures.add("churn: " + trace(t));
            }
        }

        @Override
        public String toString() {
            return "churn{subscriptions=" + subscriptions + " externalCancels=" + externalCancels + "}";
        }
    }

    /** One subscription's subscriber: books every record, requests in random chunks, pauses, may cancel itself. */
    static final class Consumer extends BaseSubscriber<Long> {
        final CountDownLatch ended = new CountDownLatch(1);
        private final Books books;
        private final SplittableRandom random; // worker thread only, after onSubscribe
        private final long cancelAfter;
        private long seen;
        private long outstanding;
        volatile Throwable error;

        Consumer(Books books, SplittableRandom random, long cancelAfter) {
            this.books = books;
            this.random = random;
            this.cancelAfter = cancelAfter;
        }

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            requestChunk();
        }

        @Override
        protected void hookOnNext(Long value) {
            books.deliver(value);
            final int p = random.nextInt(256);
            if (p == 0) {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(1 + random.nextInt(500))); // slow work
            } else if (p < 8) {
                Thread.yield();
            }
            if (++seen == cancelAfter) {
                cancel(); // from inside onNext: publishOn's next poll finds the fused queue cancelled (null)
                return;
            }
            if (--outstanding == 0) {
                requestChunk();
            }
        }

        private void requestChunk() {
            final int chunk = random.nextInt(4) == 0 ? Integer.MAX_VALUE : 1 + random.nextInt(64);
            outstanding = chunk;
            request(chunk);
        }

        @Override
        protected void hookOnError(Throwable throwable) {
            error = throwable;
        }

        @Override
        protected void hookFinally(SignalType type) {
            ended.countDown();
        }
    }

    /**
     * Every record taken from the mailbox, in order: delivered to {@code onNext} or discarded by {@code publishOn}.
     * Written on the one worker thread only (checked); {@link #taken} is read by the test thread.
     */
    static final class Books {
        final AtomicLong taken = new AtomicLong();
        final List<String> violations = new CopyOnWriteArrayList<>();
        private Thread worker;
        private long next;
        volatile long discarded;

        void deliver(long value) {
            take(value, "delivered");
        }

        void discard(Long value) {
            discarded++; // one writer: the worker
            take(value, "discarded");
        }

        private void take(long value, String how) {
            final Thread current = Thread.currentThread();
            if (worker == null) {
                worker = current;
            } else if (worker != current && violations.size() < 10) {
                violations.add(how + " " + value + " on " + current.getName() + ", not on " + worker.getName());
            }
            if (value != next && violations.size() < 10) {
                violations.add(how + " " + value + " where " + next + " was next");
            }
            next = value + 1;
            taken.incrementAndGet();
        }

        @Override
        public String toString() {
            return "books{next=" + next + " taken=" + taken.get() + " discarded=" + discarded + " violations="
                    + violations + "}";
        }
    }

}

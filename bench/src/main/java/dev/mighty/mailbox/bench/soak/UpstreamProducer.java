package dev.mighty.mailbox.bench.soak;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.reactivestreams.Subscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * A soak producer that feeds the mailbox through a {@link MailboxSubscriber}: a Reactor upstream of its own
 * sequence 0, 1, 2, ... (booked in the {@link SoakLedger} under its own producer id, like a raw sender's), on
 * {@code subscribeOn(scheduler)}, into a subscriber with its own prefetch, sharing the mailbox with the raw
 * senders and the other upstreams.
 *
 * <p>The upstream is long-lived: finite segments of 1 .. 4 × capacity messages, each followed (three times in
 * four) by a pause of up to {@link #MAX_PAUSE} during which the upstream is idle with demand outstanding (under
 * the old reservation design it held mailbox room while idle: the hold-and-wait of issue 18), repeated until the
 * soak's stop signal (which ends it at once, demand or not). Then it counts down {@code ended} (it will emit
 * nothing more, so {@link #sent()} is final) and completes once {@code release} completes; its subscriber is a
 * {@link MailboxSubscriber#sharing} one, so that completion leaves the mailbox open for the others.
 *
 * <p>Threads: the upstream runs on the scheduler's workers (and on the timer's after a pause), serially;
 * {@link #sent()} is read by the controller after {@code ended} (happens-before through the latch) or, racily,
 * for the progress line.
 */
final class UpstreamProducer {
    /** The longest idle pause between two segments. */
    static final Duration MAX_PAUSE = Duration.ofMillis(2);

    private final int producer;
    private final int prefetch;
    private final SplittableRandom random;
    /** Confined to the upstream (serial). */
    private long next;
    /** Messages emitted so far; every one was requested. */
    private volatile long sent;
    /** Whether {@code ended} was counted down for this upstream (it may end by completing or by a cancel). */
    private final AtomicBoolean endCounted = new AtomicBoolean();

    UpstreamProducer(int producer, int prefetch, long seed) {
        this.producer = producer;
        this.prefetch = prefetch;
        this.random = new SplittableRandom(seed);
    }

    /**
     * The subscriber this producer feeds the mailbox through.
     *
     * <p>{@link Faces#sharingSubscriber} ({@link MailboxSubscriber#sharing}): the upstream's completion leaves the
     * mailbox open for the others; the soak's controller closes it at the end.
     */
    static <T> Subscriber<T> subscriberFor(Mailbox<T> mailbox, int prefetch) {
        return Faces.sharingSubscriber(mailbox, prefetch);
    }

    /**
     * Subscribes this producer's upstream to its own {@link MailboxSubscriber} and returns at once.
     *
     * @param stop     when it emits, the upstream stops at once, with or without demand, and holds nothing it
     *                 waits for (an upstream that finished its segment first and waited for the others would
     *                 keep its reservations from one still waiting for room: the hold-and-wait of issue 18)
     * @param ended    counted down once the upstream will emit nothing more: its segments are over, or it was
     *                 cancelled (the mailbox was closed early: the run fails anyway)
     * @param release  completes when the upstream may complete (and, today, close the mailbox)
     * @param failure  receives an upstream error
     */
    void start(Mailbox<SoakLedger.Message> mailbox, Scheduler scheduler, Mono<?> stop, CountDownLatch ended,
            Mono<SoakLedger.Message> release, AtomicReference<Throwable> failure) {
        final int segmentMax = 4 * mailbox.capacity();
        final Flux<SoakLedger.Message> segments = Flux.defer(() -> {
            final Flux<Integer> segment = Flux.range(0, 1 + random.nextInt(segmentMax));
            if (random.nextInt(4) == 0) {
                return segment;
            }
            return segment.concatWith(Mono.delay(Duration.ofNanos(random.nextLong(MAX_PAUSE.toNanos())))
                    .then(Mono.empty())); // idle, with demand outstanding
        }).repeat()
                .takeUntilOther(stop)
                .map(i -> next()); // numbered after takeUntilOther, which may drop one in flight at the stop
        final Consumer<Throwable> onError = e -> failure.compareAndSet(null, e);
        final Runnable end = () -> {
            if (endCounted.compareAndSet(false, true)) {
                ended.countDown();
            }
        };
        segments.concatWith(Mono.fromRunnable(end))
                .concatWith(release)
                .doOnError(onError)
                .doOnCancel(end)
                .subscribeOn(scheduler)
                .subscribe(subscriberFor(mailbox, prefetch));
    }

    private SoakLedger.Message next() {
        final SoakLedger.Message m = new SoakLedger.Message(producer, next, System.nanoTime());
        sent = ++next;
        return m;
    }

    int producer() {
        return producer;
    }

    int prefetch() {
        return prefetch;
    }

    long sent() {
        return sent;
    }
}

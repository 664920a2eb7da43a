package dev.mighty.mailbox.bench;

import java.util.concurrent.Executor;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.reactor.MailboxSinks;
import dev.mighty.mailbox.rs.MailboxProcessor;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.concurrent.Queues;

/**
 * The catalogue of faces: the one place where each face of the mailbox, and each Reactor comparator, is wired. The
 * CLI's throughput rows ({@code cli.Workloads}, {@code cli.FourEmitterRows}, {@code cli.Streams} through
 * {@link FourEmitters}) and its latency section ({@code cli.Latency}), the JMH benchmarks, the soak and the Kafka
 * bridge benchmark build their faces here, so that a face measured under one name is the same wiring everywhere.
 *
 * <p>Each method's comment says exactly what it builds. The description constants say the same in the words the
 * rows print (the CLI's row descriptions and the latency section's face names start from them); the caller adds
 * where the face runs (the executor, the scheduler) and, where it picks one, the wait policy.
 *
 * <p>What stays the caller's: the mailbox (its capacity, name, producer mode and wait policy), the executors and
 * schedulers with their thread factories, the subscribers and upstreams, and the order of {@code subscribe} and
 * {@code onSubscribe}. Reactor's {@code subscribe} stays at the call site too, so that its overload
 * ({@code Subscriber}, {@code CoreSubscriber}) is the one the caller's type picks, as before.
 */
public final class Faces {
    /** What {@link #publisherOn} builds, up to its executor: {@value}; the rows add {@code " on "} and the executor. */
    public static final String PUBLISHER = "MailboxPublisher (batch " + MailboxPublisher.DEFAULT_BATCH_SIZE + ")";
    /** What {@link #publisherTrampoline} builds: {@value}. */
    public static final String PUBLISHER_TRAMPOLINE = PUBLISHER + ", trampoline (no executor)";
    /**
     * What {@link #fusedFlux} builds, up to its scheduler: {@value}; the rows add the scheduler in parentheses
     * and say which policy (none: the library's default linger).
     */
    public static final String FUSED_FLUX = "MailboxFlux.from(mailbox, " + MailboxPublisher.DEFAULT_BATCH_SIZE
            + "[, policy]).publishOn";
    /** What {@link #subscriber} builds: {@value}; the rows add its upstream and the consumer's receive. */
    public static final String SUBSCRIBER = "MailboxSubscriber (prefetch: the capacity)";
    /**
     * What {@link #processorOn} builds: {@value}; the rows add its upstream and {@code " -> subscriber on "} the
     * executor.
     */
    public static final String PROCESSOR = "MailboxProcessor (batch " + MailboxPublisher.DEFAULT_BATCH_SIZE + ")";
    /** What {@link #mailboxSinks} builds: {@value}. */
    public static final String MAILBOX_SINKS = "MailboxSinks.many(capacity)";
    /** What {@link #reactorUnicastSink} builds, the comparator: {@value}. */
    public static final String REACTOR_UNICAST_SINK = "Sinks.many().unicast().onBackpressureBuffer("
            + "Queues.get(capacity).get())";
    /**
     * What {@link #sinkOn} over {@link #reactorUnicastSink} builds, up to its scheduler: {@value}; the rows add the
     * scheduler in parentheses.
     */
    public static final String SINK_ON = REACTOR_UNICAST_SINK + ".asFlux().publishOn";

    private Faces() {
    }

    // ------------------------------------------------------------------ the Publisher half

    /**
     * {@code new MailboxPublisher<>(mailbox, batchSize)}: trampoline (no executor), the drain runs on whichever
     * thread signals it (a producer's send, a subscriber's request), its wait policy {@link WaitPolicy#park()}
     * (fixed). Not subscribed yet. The soak's legs, with their random batch sizes, and its final drain.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to drain
     * @param batchSize the most messages taken per batch, {@code >= 1}
     * @return the publisher, not subscribed
     */
    public static <T> MailboxPublisher<T> publisher(Mailbox<T> mailbox, int batchSize) {
        return new MailboxPublisher<>(mailbox, batchSize);
    }

    /**
     * {@code new MailboxPublisher<>(mailbox, batchSize, executor)}: the drains, and so every {@code onNext}, run on
     * {@code executor}, with the publisher's default wait policy ({@link WaitPolicy#defaults()}). Not subscribed
     * yet. The soak's legs, with their random batch sizes.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to drain
     * @param batchSize the most messages taken per batch, {@code >= 1}
     * @param executor runs the drains
     * @return the publisher, not subscribed
     */
    public static <T> MailboxPublisher<T> publisher(Mailbox<T> mailbox, int batchSize, Executor executor) {
        return new MailboxPublisher<>(mailbox, batchSize, executor);
    }

    /**
     * {@code new MailboxPublisher<>(mailbox, DEFAULT_BATCH_SIZE, executor).subscribe(s)}: batches of up to
     * {@value MailboxPublisher#DEFAULT_BATCH_SIZE}, the drains (every {@code onNext}) on {@code executor}, the
     * publisher's default wait policy ({@link WaitPolicy#defaults()}); the demand is {@code s}'s.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to drain
     * @param executor runs the drains: a single-thread executor, or the harness's {@link DrivenExecutor}
     * @param s the subscriber
     */
    public static <T> void publisherOn(Mailbox<T> mailbox, Executor executor, Subscriber<? super T> s) {
        new MailboxPublisher<>(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE, executor).subscribe(s);
    }

    /**
     * {@code new MailboxPublisher<>(mailbox, DEFAULT_BATCH_SIZE, executor, policy).subscribe(s)}: as
     * {@link #publisherOn(Mailbox, Executor, Subscriber)}, the drain task waiting on an empty mailbox as
     * {@code policy} says before it gives the executor's thread back.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to drain
     * @param executor runs the drains
     * @param policy how the drain task waits on an empty mailbox
     * @param s the subscriber
     */
    public static <T> void publisherOn(Mailbox<T> mailbox, Executor executor, WaitPolicy policy,
            Subscriber<? super T> s) {
        new MailboxPublisher<>(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE, executor, policy).subscribe(s);
    }

    /**
     * {@code new MailboxPublisher<>(mailbox, DEFAULT_BATCH_SIZE).subscribe(s)}: trampoline (no executor), batches
     * of up to {@value MailboxPublisher#DEFAULT_BATCH_SIZE}, the drain on whichever thread signals it (mostly the
     * producer's send), its wait policy {@link WaitPolicy#park()} (fixed); the demand is {@code s}'s.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to drain
     * @param s the subscriber
     */
    public static <T> void publisherTrampoline(Mailbox<T> mailbox, Subscriber<? super T> s) {
        new MailboxPublisher<>(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE).subscribe(s);
    }

    /**
     * {@code MailboxFlux.from(mailbox, DEFAULT_BATCH_SIZE)}: the flux as users run it (the library's default wait),
     * fused or not as its subscriber asks. Not subscribed yet. The Kafka bridge benchmark.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to receive from
     * @return the flux
     */
    public static <T> Flux<T> flux(Mailbox<T> mailbox) {
        return MailboxFlux.from(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE);
    }

    /**
     * {@code MailboxFlux.from(mailbox, batchSize)}: the library's default wait, fused or not as its subscriber asks.
     * Not subscribed yet. The soak's legs, with their random batch sizes.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to receive from
     * @param batchSize unfused: the most messages per batch; fused: the most polls between two wake-up checks
     * @return the flux
     */
    public static <T> Flux<T> flux(Mailbox<T> mailbox, int batchSize) {
        return MailboxFlux.from(mailbox, batchSize);
    }

    /**
     * {@code MailboxFlux.from(mailbox, DEFAULT_BATCH_SIZE).publishOn(scheduler)}, or with a policy
     * {@code MailboxFlux.from(mailbox, DEFAULT_BATCH_SIZE, policy).publishOn(scheduler)}: ASYNC-fused, the
     * scheduler's worker polls the mailbox ({@code publishOn}'s default prefetch). Without a policy the fused poller
     * waits the library's default way (a linger on a budget its deliveries earned, then a registration); with one,
     * as the policy says. Not subscribed yet.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to receive from
     * @param scheduler the {@code publishOn} scheduler: {@code Schedulers.newSingle(..)}, or
     *                  {@code Schedulers.fromExecutor} of the harness's {@link DrivenExecutor}
     * @param policy how the fused poller waits on an empty mailbox; null: the library's default (the linger)
     * @return the flux, to subscribe
     */
    public static <T> Flux<T> fusedFlux(Mailbox<T> mailbox, Scheduler scheduler, @Nullable WaitPolicy policy) {
        return (policy == null ? MailboxFlux.from(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE)
                : MailboxFlux.from(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE, policy)).publishOn(scheduler);
    }

    // ------------------------------------------------------------------ the Subscriber half

    /**
     * {@code new MailboxSubscriber<>(mailbox)}: keeps up to the mailbox's capacity requested from its upstream; the
     * upstream's completion closes the mailbox. Not subscribed yet.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to feed
     * @return the subscriber, for the caller's upstream
     */
    public static <T> MailboxSubscriber<T> subscriber(Mailbox<T> mailbox) {
        return new MailboxSubscriber<>(mailbox);
    }

    /**
     * {@code MailboxSubscriber.sharing(mailbox, prefetch)}: one of several upstreams feeding {@code mailbox}, up to
     * {@code prefetch} requested; the upstream's completion leaves the mailbox open (an error still closes it). The
     * soak's upstream producers.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to feed
     * @param prefetch the most messages requested and not yet admitted, {@code 1 .. capacity}
     * @return the subscriber, for the caller's upstream
     */
    public static <T> MailboxSubscriber<T> sharingSubscriber(Mailbox<T> mailbox, int prefetch) {
        return MailboxSubscriber.sharing(mailbox, prefetch);
    }

    /**
     * {@code new MailboxProcessor<>(mailbox, DEFAULT_BATCH_SIZE, executor)}: a {@link MailboxSubscriber} (prefetch:
     * the capacity) and a publisher draining in batches of up to {@value MailboxPublisher#DEFAULT_BATCH_SIZE} on
     * {@code executor} (every downstream {@code onNext}), with the default wait policy ({@link WaitPolicy#defaults()}).
     * Neither side subscribed yet.
     *
     * @param <T> the message type
     * @param mailbox the buffer between upstream and downstream
     * @param executor runs the downstream drains
     * @return the processor
     */
    public static <T> MailboxProcessor<T> processorOn(Mailbox<T> mailbox, Executor executor) {
        return new MailboxProcessor<>(mailbox, MailboxPublisher.DEFAULT_BATCH_SIZE, executor);
    }

    // ------------------------------------------------------------------ sinks

    /**
     * {@code MailboxSinks.many(capacity)}: the mailbox's many-producer Reactor sink over a bounded mailbox of that
     * capacity ({@code tryEmitNext} answers {@code FAIL_OVERFLOW} while it is full).
     *
     * @param <T> the message type
     * @param capacity the mailbox's capacity
     * @return the sink
     */
    public static <T> Sinks.Many<T> mailboxSinks(int capacity) {
        return MailboxSinks.many(capacity);
    }

    /**
     * The comparator: {@code Sinks.many().unicast().onBackpressureBuffer(Queues.<T>get(capacity).get())}, Reactor's
     * unicast sink over the bounded queue Reactor picks for that capacity ({@code tryEmitNext} answers
     * {@code FAIL_OVERFLOW} while it is full).
     *
     * @param <T> the message type
     * @param capacity the queue's capacity
     * @return the sink
     */
    public static <T> Sinks.Many<T> reactorUnicastSink(int capacity) {
        return Sinks.many().unicast().onBackpressureBuffer(Queues.<T>get(capacity).get());
    }

    /**
     * {@code sink.asFlux().publishOn(scheduler)}: the sink's flux delivered on the scheduler's worker
     * ({@code publishOn}'s default prefetch). Not subscribed yet.
     *
     * @param <T> the message type
     * @param sink the sink, e.g. {@link #reactorUnicastSink}
     * @param scheduler the {@code publishOn} scheduler: {@code Schedulers.newSingle(..)}, or
     *                  {@code Schedulers.fromExecutor} of the harness's {@link DrivenExecutor}
     * @return the flux, to subscribe
     */
    public static <T> Flux<T> sinkOn(Sinks.Many<T> sink, Scheduler scheduler) {
        return sink.asFlux().publishOn(scheduler);
    }
}

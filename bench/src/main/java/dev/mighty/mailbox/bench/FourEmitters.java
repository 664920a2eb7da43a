package dev.mighty.mailbox.bench;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.SignalType;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The many-producer workload, shared by the CLI rows, the CLI's continuous-stream section and the JMH benchmark:
 * {@value #EMITTERS} threads emitting at once into one Reactor sink, delivered through {@code publishOn(Schedulers.newSingle(..))}. In an iteration of
 * {@code n} messages, emitter e sends {@code payload[e], payload[e + 4], ...} in order: the calling thread is
 * emitter 0, three helper threads are the others. A subscriber can check each emitter's order with
 * {@code value % 4} (emitter) and the step of 4.
 *
 * <p>Every kind waits the same way when its sink is full: the given {@link DrivenExecutor.Idle} (spin, then yield),
 * counted per emission. The kinds differ only in the sink:
 * <ul>
 *     <li>{@link Kind#MAILBOX_SINKS}: {@link Faces#mailboxSinks} ({@code MailboxSinks.many(capacity)}),
 *     {@code tryEmitNext} retried on {@code FAIL_OVERFLOW} (the only failure it answers while open).</li>
 *     <li>{@link Kind#REACTOR_SINK}: {@link Faces#reactorUnicastSink}
 *     ({@code Sinks.many().unicast().onBackpressureBuffer(Queues.get(capacity).get())}),
 *     {@code emitNext(v, handler)} with a handler that retries {@code FAIL_NON_SERIALIZED} (what
 *     {@code busyLooping} retries) and {@code FAIL_OVERFLOW} (which it does not): the advice users get.</li>
 *     <li>{@link Kind#FLUX_CREATE}: {@code Flux.create(sink -> .., BUFFER)}, whose serialized sink takes any thread
 *     and never refuses (unbounded: it buffers what the subscriber has not requested).</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * {@link #open} and {@link #close}: once each, any one thread. {@link #emit(int)}: one thread at a time (it is
 * emitter 0). Helpers wait for the iteration's generation to change (spin, yield, then park; {@code emit} unparks
 * them), emit their share and count {@code running} down; {@code emit} returns once all four shares are emitted.
 *
 * <p>The continuous stream ({@link #subscribe} then {@link #emitStream}, one thread per emitter) has no iteration
 * and no barrier: each emitter cycles through its share until told to stop, so a measured window times the sink,
 * not a start barrier. There {@link Kind#FLUX_CREATE}'s emitters wait while {@code requestedFromDownstream()} is 0,
 * as a user who must not buffer without bound would (an unbounded buffer under a stream that outruns its consumer
 * grows until the heap is gone).
 *
 * <p>The scheduler's worker and the helper emitters come from a {@link ThreadCpu} registry's factories: they join
 * it (so a harness can sum their CPU time) and take their {@link Placement} slots when they start.
 */
public abstract class FourEmitters {
    /** Threads emitting at once. */
    public static final int EMITTERS = 4;

    /** The sinks compared. */
    public enum Kind {
        /** {@code MailboxSinks.many(capacity)}. */
        MAILBOX_SINKS,
        /** Reactor's unicast sink with a retrying handler. */
        REACTOR_SINK,
        /** {@code Flux.create(.., BUFFER)}. */
        FLUX_CREATE
    }

    final DrivenExecutor.Idle idle;
    private final String name;
    private final Integer[] payload;
    private final Scheduler scheduler;
    private final Thread[] helpers = new Thread[EMITTERS - 1];
    /** Bumped by the emitting thread to start an iteration; helpers wait for it to change. */
    private volatile int generation;
    /** Messages of the current iteration; written before {@code generation}. */
    private volatile int messages;
    private volatile boolean closed;
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private final ThreadCpu threads;

    FourEmitters(String name, Integer[] payload, DrivenExecutor.Idle idle, ThreadCpu threads) {
        this.name = name;
        this.payload = payload;
        this.idle = idle;
        this.threads = threads;
        this.scheduler = Schedulers.newSingle(threads.factory(name, Placement.CONSUMER));
    }

    /**
     * @param kind which sink
     * @param name names the scheduler and the helper threads
     * @param capacity of the bounded sinks
     * @param payload the messages: message i is {@code payload[i]}
     * @param idle one step of a busy wait on a full sink
     * @return the workload, not yet open
     */
    public static FourEmitters create(Kind kind, String name, int capacity, Integer[] payload,
            DrivenExecutor.Idle idle) {
        return create(kind, name, capacity, payload, idle, new ThreadCpu(Placement.unpinned()));
    }

    /**
     * As {@link #create(Kind, String, int, Integer[], DrivenExecutor.Idle)}, with the worker and the helper emitters
     * made by {@code threads}' factories.
     *
     * @param threads the registry (and placement) of this workload's own threads
     * @return the workload, not yet open
     */
    public static FourEmitters create(Kind kind, String name, int capacity, Integer[] payload,
            DrivenExecutor.Idle idle, ThreadCpu threads) {
        switch (kind) {
            case MAILBOX_SINKS:
                return new MailboxSinksEmitters(name, capacity, payload, idle, threads);
            case REACTOR_SINK:
                return new ReactorSinkEmitters(name, capacity, payload, idle, threads);
            case FLUX_CREATE:
                return new FluxCreateEmitters(name, payload, idle, threads);
            default:
                throw new IllegalArgumentException("kind: " + kind);
        }
    }

    /** @return the sink's flux, subscribed once by {@link #open} */
    abstract Flux<Integer> flux();

    /** Emits {@code value}, as emitter {@code emitter}, retrying until it is accepted. */
    abstract void emitOne(int emitter, Integer value) throws InterruptedException;

    /** Ends the stream, once. */
    abstract void complete();

    /** Emits {@code value} in the continuous stream: {@link #emitOne}, unless the kind bounds itself there. */
    void emitStreamed(int emitter, Integer value) throws InterruptedException {
        emitOne(emitter, value);
    }

    /**
     * Subscribes {@code subscriber} behind {@code publishOn} on this workload's single scheduler, then starts the
     * helper emitters.
     *
     * @param subscriber receives every message, on the scheduler's thread
     */
    public void open(CoreSubscriber<Integer> subscriber) {
        subscribe(subscriber);
        for (int h = 0; h < helpers.length; h++) {
            final int emitter = h + 1;
            final Thread t = threads.factory(name + "-emitter-" + emitter, Placement.emitter(emitter))
                    .newThread(() -> helperLoop(emitter));
            helpers[h] = t;
            t.start();
        }
    }

    /**
     * Subscribes {@code subscriber} behind {@code publishOn} on this workload's single scheduler, without the
     * helpers of {@link #emit}: the continuous stream's start ({@link #emitStream}).
     */
    public void subscribe(CoreSubscriber<Integer> subscriber) {
        flux().publishOn(scheduler).subscribe(subscriber);
    }

    /**
     * The continuous stream, as emitter {@code emitter} (one thread each, after {@link #subscribe}): emits
     * {@code payload[emitter], payload[emitter + 4], ...} below {@code n}, then starts again at
     * {@code payload[emitter]}, until {@code running} answers false (asked every 64 messages).
     *
     * @throws InterruptedException if a wait on a full sink is aborted
     */
    public void emitStream(int emitter, int n, BooleanSupplier running) throws InterruptedException {
        final Integer[] payload = this.payload;
        int i = emitter;
        for (int k = 0; (k & 63) != 0 || running.getAsBoolean(); k++) {
            emitStreamed(emitter, payload[i]);
            i += EMITTERS;
            if (i >= n) {
                i = emitter;
            }
        }
    }

    /**
     * One iteration: the four emitters send messages {@code 0 .. n-1} at once, the calling thread emitting its
     * share. Returns once every message was accepted (not necessarily delivered).
     *
     * @param n messages in all
     * @throws InterruptedException if the wait is aborted
     * @throws IllegalStateException if a helper emitter failed
     */
    public void emit(int n) throws InterruptedException {
        messages = n;
        running.set(EMITTERS - 1);
        generation = generation + 1; // only this thread writes it
        for (Thread t : helpers) {
            LockSupport.unpark(t);
        }
        emitShare(0, n);
        for (int spins = 0; running.get() != 0; ) {
            spins = idle.idle(spins);
        }
        final Throwable t = failure.get();
        if (t != null) {
            throw new IllegalStateException("an emitter failed", t);
        }
    }

    /** Stops the helpers, completes the sink and disposes the scheduler. */
    public void close() {
        closed = true;
        for (Thread t : helpers) {
            LockSupport.unpark(t);
        }
        complete();
        scheduler.dispose();
    }

    private void helperLoop(int emitter) {
        int seen = 0;
        for (;;) {
            for (int spins = 0; generation == seen && !closed; spins++) {
                if (spins < 100) {
                    Thread.onSpinWait();
                } else if (spins < 200) {
                    Thread.yield();
                } else {
                    LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
                }
            }
            if (closed) {
                return;
            }
            seen = generation;
            try {
                emitShare(emitter, messages);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
            running.decrementAndGet();
        }
    }

    private void emitShare(int emitter, int n) throws InterruptedException {
        final Integer[] payload = this.payload;
        for (int i = emitter; i < n; i += EMITTERS) {
            emitOne(emitter, payload[i]);
        }
    }

    /** {@link Faces#mailboxSinks}: {@code tryEmitNext}, retried on {@code FAIL_OVERFLOW}. */
    static final class MailboxSinksEmitters extends FourEmitters {
        private final Sinks.Many<Integer> sink;

        MailboxSinksEmitters(String name, int capacity, Integer[] payload, DrivenExecutor.Idle idle,
                ThreadCpu threads) {
            super(name, payload, idle, threads);
            this.sink = Faces.mailboxSinks(capacity);
        }

        @Override
        Flux<Integer> flux() {
            return sink.asFlux();
        }

        @Override
        void emitOne(int emitter, Integer value) throws InterruptedException {
            Sinks.EmitResult result;
            for (int spins = 0; (result = sink.tryEmitNext(value)) != Sinks.EmitResult.OK; ) {
                if (result != Sinks.EmitResult.FAIL_OVERFLOW) {
                    throw new IllegalStateException("tryEmitNext: " + result);
                }
                spins = idle.idle(spins);
            }
        }

        @Override
        void complete() {
            sink.tryEmitComplete();
        }
    }

    /**
     * Reactor's unicast sink ({@link Faces#reactorUnicastSink}) with a retrying handler, one per emitter (so the
     * back-off counter is the emitter's own, reset before each value).
     */
    static final class ReactorSinkEmitters extends FourEmitters {
        private final Sinks.Many<Integer> sink;
        private final RetryingHandler[] handlers = new RetryingHandler[EMITTERS];

        ReactorSinkEmitters(String name, int capacity, Integer[] payload, DrivenExecutor.Idle idle,
                ThreadCpu threads) {
            super(name, payload, idle, threads);
            this.sink = Faces.reactorUnicastSink(capacity);
            for (int e = 0; e < EMITTERS; e++) {
                handlers[e] = new RetryingHandler(idle);
            }
        }

        @Override
        Flux<Integer> flux() {
            return sink.asFlux();
        }

        @Override
        void emitOne(int emitter, Integer value) {
            final RetryingHandler handler = handlers[emitter];
            handler.spins = 0;
            sink.emitNext(value, handler);
        }

        @Override
        void complete() {
            sink.tryEmitComplete();
        }
    }

    /** Retries FAIL_NON_SERIALIZED and FAIL_OVERFLOW, backing off with {@code idle}; anything else fails the run. */
    static final class RetryingHandler implements Sinks.EmitFailureHandler {
        private final DrivenExecutor.Idle idle;
        int spins;

        RetryingHandler(DrivenExecutor.Idle idle) {
            this.idle = idle;
        }

        @Override
        public boolean onEmitFailure(SignalType signalType, Sinks.EmitResult result) {
            if (result != Sinks.EmitResult.FAIL_NON_SERIALIZED && result != Sinks.EmitResult.FAIL_OVERFLOW) {
                throw new IllegalStateException("emitNext: " + result);
            }
            try {
                spins = idle.idle(spins);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("aborted", e);
            }
            return true;
        }
    }

    /** {@code Flux.create(.., BUFFER)}: its serialized {@code FluxSink.next} from every emitter. */
    static final class FluxCreateEmitters extends FourEmitters {
        private final Flux<Integer> flux;
        private volatile FluxSink<Integer> sink;

        FluxCreateEmitters(String name, Integer[] payload, DrivenExecutor.Idle idle, ThreadCpu threads) {
            super(name, payload, idle, threads);
            this.flux = Flux.create(emitter -> sink = emitter, FluxSink.OverflowStrategy.BUFFER);
        }

        @Override
        Flux<Integer> flux() {
            return flux;
        }

        @Override
        void emitOne(int emitter, Integer value) {
            sink.next(value);
        }

        /** Waits while the downstream has no demand, then {@code next}: the stream stays bounded. */
        @Override
        void emitStreamed(int emitter, Integer value) throws InterruptedException {
            final FluxSink<Integer> sink = this.sink;
            for (int spins = 0; sink.requestedFromDownstream() <= 0 && !sink.isCancelled(); ) {
                spins = idle.idle(spins);
            }
            sink.next(value);
        }

        @Override
        void complete() {
            final FluxSink<Integer> sink = this.sink;
            if (sink != null) {
                sink.complete();
            }
        }
    }
}

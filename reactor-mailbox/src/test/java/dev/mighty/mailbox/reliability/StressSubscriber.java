package dev.mighty.mailbox.reliability;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

import dev.mighty.mailbox.SpecProbes;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;

/**
 * A subscriber that trusts nothing (reactor-core's {@code StressSubscriber}, JCTools' sanity checks): it records
 * what it receives and flags every spec break it can observe, instead of failing inside the publisher's thread.
 * <ul>
 *     <li>§1.3: {@code onNext} (or a terminal signal) overlapping another signal of this subscriber;</li>
 *     <li>one consumer at a time: {@code onNext} of two subscribers of the same mailbox overlapping (a shared
 *     {@link Lane});</li>
 *     <li>§1.1: more {@code onNext} than requested (the demand is counted before {@code request} is called, so a
 *     synchronous delivery inside {@code request} is accounted for);</li>
 *     <li>§1.7: any signal after {@code onComplete}/{@code onError}; a second terminal signal;</li>
 *     <li>§1.9: a signal before {@code onSubscribe}, or a second {@code onSubscribe}.</li>
 * </ul>
 * Implements {@link CoreSubscriber} so Reactor does not wrap it in its own strict subscriber. Thread-safe.
 * Registers with {@link SpecProbes} when built: a test that builds one fails if it saw a violation or if an
 * assertion inside its hook failed.
 *
 * <p>Built {@code fused}, it asks the source for {@link Fuseable#ASYNC} fusion and, if granted, acts as its own
 * fused operator: on {@code onNext(null)} ("poll now") and on {@code request} it polls, at most its demand,
 * under a WIP guard, and records each polled value as delivered (so unlike {@code publishOn} it never drops a
 * message it polled). It then also flags: a value polled after {@code cancel()} returned on the polling thread,
 * and a value still there to poll after {@code onComplete}.
 *
 * @param <T> the value type
 */
final class StressSubscriber<T> implements CoreSubscriber<T> {

    /** Shared by the subscribers of one mailbox: at most one may be inside {@code onNext} at a time. */
    static final class Lane {
        final AtomicInteger inOnNext = new AtomicInteger();
        /** Every value delivered by any subscriber of the lane, in delivery order (deliveries are serial). */
        final Queue<Object> log = new ConcurrentLinkedQueue<>();
        final List<String> violations = new CopyOnWriteArrayList<>();
    }

    final Queue<T> values = new ConcurrentLinkedQueue<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    /** Assertion errors thrown by {@link #onNextHook}: the publisher catches them (§2.13), the test must not. */
    final Queue<AssertionError> hookFailures = new ConcurrentLinkedQueue<>();
    private final String name;
    private final Lane lane;
    private final long initialRequest;
    private final boolean fused;
    private final AtomicInteger wip = new AtomicInteger();
    private volatile Fuseable.QueueSubscription<T> queue;
    private volatile Thread cancelThread;
    private final AtomicInteger inSignal = new AtomicInteger();
    private final AtomicLong requested = new AtomicLong();
    private final AtomicLong received = new AtomicLong();
    private final AtomicInteger onSubscribeCount = new AtomicInteger();
    private final CountDownLatch terminal = new CountDownLatch(1);
    private volatile Subscription subscription;
    private volatile boolean terminated;
    private volatile boolean cancelled;
    volatile Throwable error;
    volatile boolean completed;
    /** Runs inside {@code onNext} after the value is recorded; may request, cancel, send or throw. */
    volatile BiConsumer<StressSubscriber<T>, T> onNextHook;

    StressSubscriber(String name, Lane lane, long initialRequest, boolean fused) {
        this.name = name;
        this.lane = lane;
        this.initialRequest = initialRequest;
        this.fused = fused;
        SpecProbes.register(this, name, violations, hookFailures);
    }

    StressSubscriber(String name, Lane lane, long initialRequest) {
        this(name, lane, initialRequest, false);
    }

    StressSubscriber(long initialRequest) {
        this("subscriber", null, initialRequest, false);
    }

    @Override
    public void onSubscribe(Subscription s) {
        enter("onSubscribe");
        try {
            if (onSubscribeCount.incrementAndGet() != 1) {
                violation("§1.9/§2.5 second onSubscribe");
                return;
            }
            if (s == null) {
                violation("§1.9 onSubscribe(null)");
                return;
            }
            if (fused && s instanceof Fuseable.QueueSubscription) {
                @SuppressWarnings("unchecked")
                final Fuseable.QueueSubscription<T> qs = (Fuseable.QueueSubscription<T>) s;
                if (qs.requestFusion(Fuseable.ASYNC) == Fuseable.ASYNC) {
                    queue = qs;
                }
            }
            subscription = s;
            if (initialRequest > 0) {
                request(initialRequest);
            }
        } finally {
            exit();
        }
    }

    @Override
    public void onNext(T t) {
        if (queue != null) {
            if (t != null) {
                violation("ASYNC fusion: onNext(value) instead of onNext(null): " + t);
            }
            drainFused(); // "poll now"
            return;
        }
        deliver(t);
    }

    /** Polls what the demand allows, one thread at a time, recording each value as delivered. */
    private void drainFused() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        final Fuseable.QueueSubscription<T> queue = this.queue;
        int missed = 1;
        for (;;) {
            while (received.get() < requested.get()) {
                final T v = queue.poll();
                if (v == null) {
                    break;
                }
                if (cancelThread == Thread.currentThread()) {
                    violation("poll() returned a value after cancel() on the polling thread: " + v);
                }
                deliver(v);
            }
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    private void deliver(T t) {
        enter("onNext");
        final boolean laneFree = lane == null || lane.inOnNext.getAndIncrement() == 0;
        try {
            if (!laneFree) {
                violation("two subscribers of one mailbox in onNext at once: " + t);
            }
            if (t == null) {
                violation("§2.13 onNext(null)");
            }
            if (onSubscribeCount.get() == 0) {
                violation("§1.9 onNext before onSubscribe: " + t);
            }
            if (terminated) {
                violation("§1.7 onNext after a terminal signal: " + t);
            }
            final long n = received.incrementAndGet();
            final long r = requested.get();
            if (r != Long.MAX_VALUE && n > r) {
                violation("§1.1 onNext beyond demand: #" + n + " with " + r + " requested: " + t);
            }
            values.add(t);
            if (lane != null) {
                lane.log.add(t);
            }
            final BiConsumer<StressSubscriber<T>, T> hook = onNextHook;
            if (hook != null) {
                try {
                    hook.accept(this, t);
                } catch (AssertionError e) {
                    hookFailures.add(e);
                    throw e;
                }
            }
        } finally {
            if (lane != null) {
                lane.inOnNext.getAndDecrement();
            }
            exit();
        }
    }

    @Override
    public void onError(Throwable t) {
        terminal("onError");
        error = t;
        terminated = true;
        terminal.countDown();
        exit();
    }

    @Override
    public void onComplete() {
        final Fuseable.QueueSubscription<T> queue = this.queue;
        if (queue != null && wip.get() == 0 && !queue.isEmpty()) {
            violation("ASYNC fusion: onComplete while the queue still has values");
        }
        terminal("onComplete");
        completed = true;
        terminated = true;
        terminal.countDown();
        exit();
    }

    private void terminal(String signal) {
        enter(signal);
        if (onSubscribeCount.get() == 0) {
            violation("§1.9 " + signal + " before onSubscribe");
        }
        if (terminated) {
            violation("§1.7 " + signal + " after a terminal signal");
        }
    }

    /** Adds to the demand first, then requests: deliveries made inside {@code request} are already allowed. */
    void request(long n) {
        if (n > 0) {
            requested.accumulateAndGet(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b); // §3.17
        }
        subscription.request(n);
        if (queue != null) {
            drainFused();
        }
    }

    void cancel() {
        cancelled = true;
        cancelThread = Thread.currentThread();
        subscription.cancel();
    }

    boolean isFused() {
        return queue != null;
    }

    boolean isSubscribed() {
        return subscription != null;
    }

    boolean isCancelled() {
        return cancelled;
    }

    boolean isTerminated() {
        return terminated;
    }

    long received() {
        return received.get();
    }

    boolean awaitTerminal(Duration timeout) {
        try {
            return terminal.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void enter(String signal) {
        if (inSignal.getAndIncrement() != 0) {
            violation("§1.3 " + signal + " overlapping another signal");
        }
    }

    private void exit() {
        inSignal.getAndDecrement();
    }

    private void violation(String what) {
        violations.add(name + ": " + what + " on " + Thread.currentThread().getName());
        if (lane != null) {
            lane.violations.add(name + ": " + what);
        }
    }

    @Override
    public String toString() {
        return name + "[received=" + received + ", requested=" + requested + ", cancelled=" + cancelled
                + ", completed=" + completed + ", error=" + error + "]";
    }
}

package dev.mighty.mailbox.reactor;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;

/**
 * A minimal ASYNC-fused consumer, shaped like Reactor's {@code publishOn} drain without the scheduler: it asks
 * for {@code ASYNC} fusion, treats {@code onNext(null)} as "poll now", and polls while it has demand, under a
 * WIP counter. Records what it got and flags overlapping drains, polls beyond demand and values after a
 * terminal signal.
 */
final class FusedProbe<T> implements CoreSubscriber<T> {
    final List<T> values = new CopyOnWriteArrayList<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    final AtomicReference<Throwable> error = new AtomicReference<>();
    final CountDownLatch terminated = new CountDownLatch(1);
    final AtomicInteger terminalCount = new AtomicInteger();
    final AtomicLong requested = new AtomicLong();
    final AtomicInteger wip = new AtomicInteger();
    final AtomicInteger inDrain = new AtomicInteger();
    final int requestedMode;

    volatile Subscription subscription;
    volatile Fuseable.QueueSubscription<T> queue;
    volatile int fusionMode = -1;
    volatile boolean done;
    volatile boolean cancelled;
    /** When set, {@code onNext(null)} only counts: the test drains, as publishOn's worker would, later. */
    volatile boolean deferDrain;
    final AtomicInteger signals = new AtomicInteger();

    FusedProbe(long initialRequest) {
        this(initialRequest, Fuseable.ANY | Fuseable.THREAD_BARRIER);
    }

    FusedProbe(long initialRequest, int requestedMode) {
        this.requested.set(initialRequest);
        this.requestedMode = requestedMode;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void onSubscribe(Subscription s) {
        subscription = s;
        if (s instanceof Fuseable.QueueSubscription) {
            final Fuseable.QueueSubscription<T> qs = (Fuseable.QueueSubscription<T>) s;
            fusionMode = qs.requestFusion(requestedMode);
            if (fusionMode == Fuseable.ASYNC) {
                queue = qs;
            }
        }
        final long initial = requested.get();
        if (initial > 0) {
            s.request(initial);
        }
    }

    @Override
    public void onNext(T t) {
        if (queue != null) {
            if (t != null) {
                violations.add("non-null onNext in ASYNC mode: " + t);
            }
            signals.incrementAndGet();
            if (!deferDrain) {
                drain();
            }
            return;
        }
        if (done) {
            violations.add("onNext after terminal: " + t);
        }
        values.add(t);
    }

    @Override
    public void onError(Throwable t) {
        error.set(t);
        done = true;
        terminalCount.incrementAndGet();
        if (queue != null) {
            drain();
        }
        terminated.countDown();
    }

    @Override
    public void onComplete() {
        done = true;
        terminalCount.incrementAndGet();
        if (queue != null) {
            drain();
        }
        terminated.countDown();
    }

    /** Adds demand and drains, as an operator does when its downstream requests. */
    void request(long n) {
        requested.addAndGet(n);
        final Subscription s = subscription;
        if (queue == null) {
            s.request(n);
        } else {
            s.request(n);
            drain();
        }
    }

    void cancel() {
        cancelled = true;
        subscription.cancel();
    }

    void drain() {
        if (wip.getAndIncrement() != 0) {
            return;
        }
        int missed = 1;
        final Fuseable.QueueSubscription<T> q = queue;
        for (;;) {
            if (inDrain.incrementAndGet() != 1) {
                violations.add("overlapping drains");
            }
            while (!cancelled && requested.get() > 0) {
                final T v = q.poll();
                if (v == null) {
                    break;
                }
                requested.decrementAndGet();
                values.add(v);
            }
            inDrain.decrementAndGet();
            missed = wip.addAndGet(-missed);
            if (missed == 0) {
                return;
            }
        }
    }

    boolean await(long millis) throws InterruptedException {
        return terminated.await(millis, TimeUnit.MILLISECONDS);
    }

    boolean awaitValues(int count, long millis) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (values.size() < count) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }
}

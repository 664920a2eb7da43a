package dev.mighty.mailbox.reactor;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.SpecProbes;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;

/**
 * A minimal ASYNC-fused consumer, shaped like Reactor's {@code publishOn} drain without the scheduler: it asks
 * for {@code ASYNC} fusion, treats {@code onNext(null)} as "poll now", and polls while it has demand, under a
 * WIP counter. Records what it got and flags overlapping drains, signals overlapping on two threads (§1.3), a
 * second onSubscribe, and signals after a terminal one and a second terminal signal (§1.7). Registers with
 * {@link SpecProbes} when built: a test that builds one fails if it saw a violation.
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
    /** The thread inside a signal method now, or null. */
    private final AtomicReference<Thread> signalling = new AtomicReference<>();
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
        SpecProbes.register(this, null, violations, List.of());
    }

    @Override
    @SuppressWarnings("unchecked")
    public void onSubscribe(Subscription s) {
        final boolean entered = enter("onSubscribe");
        try {
            if (subscription != null) {
                violations.add("second onSubscribe");
            }
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
        } finally {
            exit(entered);
        }
    }

    @Override
    public void onNext(T t) {
        final boolean entered = enter("onNext");
        try {
            if (done) {
                violations.add("onNext after terminal: " + t);
            }
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
            values.add(t);
        } finally {
            exit(entered);
        }
    }

    @Override
    public void onError(Throwable t) {
        final boolean entered = enter("onError");
        try {
            error.set(t);
            terminal();
        } finally {
            exit(entered);
        }
    }

    @Override
    public void onComplete() {
        final boolean entered = enter("onComplete");
        try {
            terminal();
        } finally {
            exit(entered);
        }
    }

    private void terminal() {
        done = true;
        if (terminalCount.incrementAndGet() != 1) {
            violations.add("second terminal signal");
        }
        if (queue != null) {
            drain();
        }
        terminated.countDown();
    }

    /**
     * Flags a signal that overlaps one running on another thread (§1.3). A signal re-entered on the same thread
     * (onNext from inside the request that onSubscribe makes) is serial, not a violation.
     *
     * @return whether this call took ownership and must release it in {@link #exit}
     */
    private boolean enter(String signal) {
        final Thread me = Thread.currentThread();
        if (signalling.get() == me) {
            return false;
        }
        if (!signalling.compareAndSet(null, me)) {
            violations.add("§1.3 " + signal + " on " + me.getName() + " overlapping a signal on " + signalling.get());
            return false;
        }
        return true;
    }

    private void exit(boolean entered) {
        if (entered) {
            signalling.set(null);
        }
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

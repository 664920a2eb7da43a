package dev.mighty.mailbox.rs;

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
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * A test subscriber in the spirit of reactor's {@code StressSubscriber}: records what it gets and flags
 * spec violations it can see (overlapping signals §1.3, onNext beyond demand §1.1, signals after a terminal
 * §1.7, a second onSubscribe), instead of trusting the publisher. Thread-safe. Registers with {@link SpecProbes}
 * when built: a test that builds one fails if it saw a violation or if an assertion inside its hook failed.
 */
final class CheckingSubscriber<T> implements Subscriber<T> {
    final Queue<T> values = new ConcurrentLinkedQueue<>();
    final Queue<Thread> onNextThreads = new ConcurrentLinkedQueue<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    /** Assertion errors thrown by {@link #onNextHook}: the publisher catches them (§2.13), the test must not. */
    final Queue<AssertionError> hookFailures = new ConcurrentLinkedQueue<>();
    final CountDownLatch subscribed = new CountDownLatch(1);
    final CountDownLatch terminated = new CountDownLatch(1);
    final AtomicInteger onNextCount = new AtomicInteger();
    final AtomicInteger terminalCount = new AtomicInteger();
    private final AtomicInteger inSignal = new AtomicInteger();
    private final AtomicLong outstanding = new AtomicLong();
    private final long initialRequest;
    volatile Subscription subscription;
    volatile Throwable error;
    volatile boolean completed;
    volatile Thread terminalThread;
    /** Runs inside onNext, after the value is recorded; may throw to test a failing subscriber. */
    volatile BiConsumer<CheckingSubscriber<T>, T> onNextHook;

    CheckingSubscriber(long initialRequest) {
        this.initialRequest = initialRequest;
        SpecProbes.register(this, null, violations, hookFailures);
    }

    @Override
    public void onSubscribe(Subscription s) {
        enter("onSubscribe");
        try {
            if (subscription != null) {
                violations.add("second onSubscribe");
            }
            subscription = s;
            subscribed.countDown();
            if (initialRequest > 0) {
                request(initialRequest);
            }
        } finally {
            exit();
        }
    }

    @Override
    public void onNext(T t) {
        enter("onNext");
        try {
            if (terminalCount.get() != 0) {
                violations.add("onNext after terminal: " + t);
            }
            if (outstanding.get() != Long.MAX_VALUE && outstanding.getAndDecrement() <= 0) {
                violations.add("§1.1 onNext beyond demand: " + t);
            }
            values.add(t);
            onNextThreads.add(Thread.currentThread());
            onNextCount.incrementAndGet();
            final BiConsumer<CheckingSubscriber<T>, T> hook = onNextHook;
            if (hook != null) {
                try {
                    hook.accept(this, t);
                } catch (AssertionError e) {
                    hookFailures.add(e);
                    throw e;
                }
            }
        } finally {
            exit();
        }
    }

    @Override
    public void onError(Throwable t) {
        enter("onError");
        try {
            error = t;
            terminal();
        } finally {
            exit();
        }
    }

    @Override
    public void onComplete() {
        enter("onComplete");
        try {
            completed = true;
            terminal();
        } finally {
            exit();
        }
    }

    private void terminal() {
        terminalThread = Thread.currentThread();
        if (terminalCount.incrementAndGet() != 1) {
            violations.add("second terminal signal");
        }
        terminated.countDown();
    }

    private void enter(String signal) {
        if (inSignal.getAndIncrement() != 0) {
            violations.add("§1.3 overlapping " + signal + " on " + Thread.currentThread().getName());
        }
    }

    private void exit() {
        inSignal.decrementAndGet();
    }

    void request(long n) {
        outstanding.getAndUpdate(r -> r + n < 0 ? Long.MAX_VALUE : r + n);
        subscription.request(n);
    }

    void cancel() {
        subscription.cancel();
    }

    boolean awaitTerminated(Duration timeout) throws InterruptedException {
        return terminated.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Waits (bounded) until {@code n} values arrived; returns whether they did. */
    boolean awaitValues(int n, Duration timeout) throws InterruptedException {
        final long deadline = System.nanoTime() + timeout.toNanos();
        while (onNextCount.get() < n) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(1);
        }
        return true;
    }
}

package dev.mighty.mailbox.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs N actions at the same moment on N long-lived threads, round after round (reactor-test's
 * {@code RaceTestUtils.race} without a scheduler, and with threads that survive the round so thousands of
 * rounds cost no thread creation). Each round every thread spins on a shared start counter, so the actions
 * overlap as closely as the machine allows; the round ends when every action has returned. An action that
 * throws fails the round with that exception; a round that does not end within the timeout fails with an
 * {@link AssertionError} naming the stuck threads (a hang becomes a failure, not a stuck build).
 *
 * <p>Not thread-safe: one test thread drives a {@code Race}.
 */
final class Race implements AutoCloseable {
    private final Worker[] workers;
    private final Duration roundTimeout;

    Race(int parties, Duration roundTimeout) {
        this.roundTimeout = roundTimeout;
        this.workers = new Worker[parties];
        for (int i = 0; i < parties; i++) {
            workers[i] = new Worker("race-" + i);
            workers[i].start();
        }
    }

    /** Runs {@code actions[i]} on thread i, all released together; returns once all have returned. */
    void run(Runnable... actions) {
        if (actions.length != workers.length) {
            throw new IllegalArgumentException("actions: " + actions.length + " (expected: " + workers.length + ")");
        }
        final AtomicInteger start = new AtomicInteger(actions.length);
        for (int i = 0; i < actions.length; i++) {
            workers[i].submit(actions[i], start);
        }
        final long deadline = System.nanoTime() + roundTimeout.toNanos();
        Throwable failure = null;
        final List<String> stuck = new ArrayList<>();
        for (Worker w : workers) {
            while (!w.idle()) {
                if (System.nanoTime() - deadline > 0) {
                    stuck.add(w.getName() + " " + Arrays.toString(w.getStackTrace()));
                    break;
                }
                Thread.onSpinWait();
                Thread.yield();
            }
            final Throwable t = w.failure.getAndSet(null);
            if (t != null && failure == null) {
                failure = t;
            }
        }
        if (!stuck.isEmpty()) {
            throw new AssertionError("race round did not end within " + roundTimeout + ": " + stuck, failure);
        }
        if (failure instanceof Error) {
            throw (Error) failure;
        }
        if (failure != null) {
            throw new AssertionError("race action failed", failure);
        }
    }

    @Override
    public void close() {
        for (Worker w : workers) {
            w.interrupt();
            w.shutdown = true;
            LockSupport.unpark(w);
        }
    }

    private static final class Worker extends Thread {
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        volatile Runnable task;
        volatile AtomicInteger start;
        volatile boolean shutdown;

        Worker(String name) {
            super(name);
            setDaemon(true);
        }

        void submit(Runnable action, AtomicInteger start) {
            this.start = start;
            this.task = action; // volatile write publishes start; pairs with the read of task in run()
            LockSupport.unpark(this);
        }

        boolean idle() {
            return task == null;
        }

        @Override
        public void run() {
            while (!shutdown) {
                final Runnable action = task;
                if (action == null) {
                    LockSupport.parkNanos(this, 100_000L);
                    continue;
                }
                final AtomicInteger start = this.start;
                start.decrementAndGet();
                for (int spins = 0; start.get() > 0; spins++) {
                    if (spins < 1_000) {
                        Thread.onSpinWait();
                    } else {
                        Thread.yield(); // 2 cores: let a descheduled party reach the start line
                    }
                }
                try {
                    action.run();
                } catch (Throwable t) {
                    failure.set(t);
                } finally {
                    Thread.interrupted(); // an action's interrupt must not leak into the next round
                    task = null;
                }
            }
        }
    }
}

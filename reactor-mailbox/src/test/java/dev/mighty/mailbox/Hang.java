package dev.mighty.mailbox;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

/**
 * How long a test waits for something that only a bug can keep from happening: a latch a helper thread counts
 * down, a {@code StepVerifier} that expects a signal, a thread that should end, a race round that should finish.
 *
 * <p>The limit says nothing about speed. It is long (120 s, {@code -Dmailbox.test.hangSeconds=N} changes it) so a
 * loaded 2-core machine never reaches it while every thread makes progress, and short enough that a lost wake-up
 * fails the build instead of stalling it until the per-test timeout (5 min, with a thread dump) fires. Waits that
 * are meant to elapse (a {@code recv(timeout)} that must time out) use their own short durations instead.
 */
public final class Hang {
    /** The wait limit, in seconds. */
    public static final long SECONDS = Long.getLong("mailbox.test.hangSeconds", 120L);
    /** The wait limit. */
    public static final Duration TIMEOUT = Duration.ofSeconds(SECONDS);

    private Hang() {
    }

    /**
     * Awaits {@code latch} for at most {@link #TIMEOUT}.
     *
     * @throws AssertionError naming {@code what} when the limit passes first
     */
    public static void await(CountDownLatch latch, String what) throws InterruptedException {
        if (!latch.await(SECONDS, TimeUnit.SECONDS)) {
            throw new AssertionError("hang: " + what + " did not happen within " + TIMEOUT
                    + " (count " + latch.getCount() + ")");
        }
    }

    /**
     * Waits until {@code progress} reaches {@code target}, failing only when it stops moving: no change for
     * {@link #TIMEOUT} is a stall (a lost wake-up, a deadlock), however long the whole run takes on a loaded machine.
     *
     * @param what names the wait in the failure
     * @param diagnostics what to print on a stall (the mailbox's stats, its close cause, the waiters, ...)
     * @throws AssertionError on a stall, with {@code diagnostics} and every thread's stack
     */
    public static void awaitProgress(LongSupplier progress, long target, String what, Supplier<String> diagnostics)
            throws InterruptedException {
        long last = progress.getAsLong();
        long lastChange = System.nanoTime();
        while (last < target) {
            Thread.sleep(50);
            final long now = progress.getAsLong();
            if (now != last) {
                last = now;
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > TIMEOUT.toNanos()) {
                throw new AssertionError("stall: " + what + " made no progress for " + TIMEOUT + " at " + now + " of "
                        + target + "\n" + diagnostics.get() + "\n" + threadDump());
            }
        }
    }

    /** @return every live thread's name, state and top frames */
    public static String threadDump() {
        final StringBuilder out = new StringBuilder("threads:\n");
        Thread.getAllStackTraces().forEach((thread, stack) -> {
            out.append("  ").append(thread.getName()).append(' ').append(thread.getState()).append('\n');
            for (int i = 0; i < Math.min(stack.length, 8); i++) {
                out.append("      at ").append(stack[i]).append('\n');
            }
        });
        return out.toString();
    }

    /**
     * reactor-test's {@code RaceTestUtils.race} with {@link #TIMEOUT} instead of its fixed 5 s, which a loaded
     * machine can exceed with both actions healthy.
     */
    public static void race(Runnable... actions) {
        RaceTestUtils.race((int) SECONDS, Schedulers.boundedElastic(), actions);
    }
}

package dev.mighty.mailbox.bench.soak;

import java.time.Duration;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The soak's progress detector: a daemon thread that samples a delivery count once a second and, when it has
 * not moved for {@code limit}, takes a diagnosis (the caller's, e.g. {@code stats()} and {@code closeCause()},
 * plus a summary of the threads and their top frames) and interrupts the controller thread, which then reports
 * the run as stalled. It watches progress rather than one deadline, so a long soak fails within {@code limit} of
 * the moment it stops moving, and a slow but moving one never does.
 *
 * <p>Threads: {@link #start}, {@link #close} and the accessors on the controller thread; the watch on its own.
 */
final class StallWatch implements AutoCloseable {
    /** Threads whose stacks the diagnosis shows (the rest of the JVM is only counted). */
    private static final String[] WATCHED = {"soak", "parallel-", "boundedElastic-"};
    private static final int FRAMES = 6;

    private final LongSupplier progress;
    private final Supplier<String> diagnosis;
    private final Duration limit;
    private final Thread controller;
    private final Thread watcher;
    private volatile String stalled;

    private StallWatch(LongSupplier progress, Supplier<String> diagnosis, Duration limit, Thread controller) {
        this.progress = progress;
        this.diagnosis = diagnosis;
        this.limit = limit;
        this.controller = controller;
        this.watcher = new Thread(this::watch, "soak-stall-watch");
        this.watcher.setDaemon(true);
    }

    /** Starts watching {@code progress} on behalf of the calling thread. */
    static StallWatch start(LongSupplier progress, Supplier<String> diagnosis, Duration limit) {
        final StallWatch w = new StallWatch(progress, diagnosis, limit, Thread.currentThread());
        w.watcher.start();
        return w;
    }

    private void watch() {
        final long tick = Math.max(10L, Math.min(1000L, limit.toMillis() / 4));
        long last = progress.getAsLong();
        long lastMoved = System.nanoTime();
        try {
            for (;;) {
                TimeUnit.MILLISECONDS.sleep(tick);
                final long now = progress.getAsLong();
                final long t = System.nanoTime();
                if (now != last) {
                    last = now;
                    lastMoved = t;
                } else if (t - lastMoved >= limit.toNanos()) {
                    stalled = String.format(Locale.ROOT, "no delivery for %s (at %,d deliveries)%n%s%n%s",
                            SoakRunner.format(Duration.ofNanos(t - lastMoved)), now, diagnosis.get(), threads());
                    controller.interrupt();
                    return;
                }
            }
        } catch (InterruptedException closed) {
            // close(): the run ended
        }
    }

    /** @return the diagnosis if the run stalled, else null */
    String stalled() {
        return stalled;
    }

    /** Stops watching; a stall found before this call stays reported. */
    @Override
    public void close() {
        watcher.interrupt();
    }

    /** One line per thread state, then the controller and the watched threads with their top frames. */
    private String threads() {
        final Map<Thread, StackTraceElement[]> all = Thread.getAllStackTraces();
        final Map<Thread.State, Integer> states = new EnumMap<>(Thread.State.class);
        final StringBuilder sb = new StringBuilder();
        all.keySet().stream().sorted(Comparator.comparing(Thread::getName)).forEach(t -> {
            states.merge(t.getState(), 1, Integer::sum);
            if (t != controller && !watched(t.getName())) {
                return;
            }
            sb.append("  \"").append(t.getName()).append("\" ").append(t.getState()).append('\n');
            final StackTraceElement[] frames = all.get(t);
            for (int i = 0; i < Math.min(FRAMES, frames.length); i++) {
                sb.append("      at ").append(frames[i]).append('\n');
            }
        });
        return "threads: " + all.size() + " " + states + "\n" + sb;
    }

    private static boolean watched(String name) {
        for (String prefix : WATCHED) {
            if (name.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }
}

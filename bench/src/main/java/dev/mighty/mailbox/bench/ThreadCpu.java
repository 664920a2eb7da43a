package dev.mighty.mailbox.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;

/**
 * The threads that do one row's work, and their CPU time: a registry its threads join from inside themselves
 * (through {@link #factory}, or {@link #join}), summed with {@link ThreadMXBean#getThreadCpuTime(long)}. A harness
 * samples {@link #cpuNanos()} at the start and at the end of what it measures: the difference is the CPU those
 * threads spent, waiting included (a spinning consumer is never free).
 *
 * <h2>Threads</h2>
 * Any thread; the registry is a copy-on-write list.
 */
public final class ThreadCpu {
    private static final ThreadMXBean BEAN = ManagementFactory.getThreadMXBean();

    private final Placement placement;
    private final List<Thread> threads = new CopyOnWriteArrayList<>();

    /** @param placement where {@link #factory}'s threads place themselves when they start */
    public ThreadCpu(Placement placement) {
        this.placement = placement;
    }

    /** @return whether this JVM measures thread CPU time (if not, {@link #cpuNanos()} answers -1) */
    public static boolean supported() {
        return BEAN.isThreadCpuTimeSupported() && BEAN.isThreadCpuTimeEnabled();
    }

    /** @return the placement of this registry's threads */
    public Placement placement() {
        return placement;
    }

    /**
     * Registers the calling thread and places it in {@code slot}.
     *
     * @return null on success, else why the thread was not placed
     */
    public String join(int slot) {
        final Thread self = Thread.currentThread();
        if (!threads.contains(self)) {
            threads.add(self);
        }
        return placement.place(slot);
    }

    /** Registers {@code t} without placing it (a thread this harness shares, placed once by its owner). */
    public void add(Thread t) {
        if (!threads.contains(t)) {
            threads.add(t);
        }
    }

    /**
     * @param name the threads' name ({@code name}, then {@code name-2}, ... for later ones)
     * @param slot the placement slot of every thread it makes
     * @return daemon threads that place themselves and join this registry before they run their task
     */
    public ThreadFactory factory(String name, int slot) {
        return new ThreadFactory() {
            private int made;

            @Override
            public synchronized Thread newThread(Runnable r) {
                final Thread t = new Thread(() -> {
                    join(slot);
                    r.run();
                }, ++made == 1 ? name : name + "-" + made);
                t.setDaemon(true);
                return t;
            }
        };
    }

    /** @return the registered threads, in joining order */
    public List<Thread> threads() {
        return List.copyOf(threads);
    }

    /**
     * @return the summed CPU time of the registered threads so far (a thread that has ended counts 0), or -1 if
     *         this JVM does not measure thread CPU time
     */
    public long cpuNanos() {
        if (!supported()) {
            return -1L;
        }
        long sum = 0;
        for (Thread t : threads) {
            sum += Math.max(0L, BEAN.getThreadCpuTime(t.getId()));
        }
        return sum;
    }
}

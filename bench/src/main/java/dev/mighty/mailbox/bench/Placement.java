package dev.mighty.mailbox.bench;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Where a harness puts its threads: unpinned (every thread on all the CPUs the process started with), or pinned,
 * one CPU per <em>slot</em>, round-robin over the allowed CPUs when there are more slots than CPUs.
 *
 * <p>Slots name roles, so that every row places the same roles alike: {@link #PRODUCER} (the harness's producer,
 * or emitter 0), {@link #CONSUMER} (the thread that receives: the harness's consumer, or the row's executor or
 * scheduler worker, which then takes the consumer's CPU while the harness consumer only waits), and
 * {@link #emitter(int)} for the further producers of a many-producer row.
 *
 * <h2>Threads</h2>
 * Immutable but for the first failure it records; {@link #place} acts on the calling thread.
 */
public final class Placement {
    /** The harness's producer thread, or emitter 0. */
    public static final int PRODUCER = 0;
    /** The receiving thread: the harness's consumer, an executor's or a scheduler's worker. */
    public static final int CONSUMER = 1;

    private static final Placement UNPINNED = new Placement(null);

    /** Null: unpinned. */
    private final int[] cpus;
    private final AtomicReference<String> failure = new AtomicReference<>();

    private Placement(int[] cpus) {
        this.cpus = cpus;
    }

    /** @return the placement that pins nothing (and frees a thread that inherited a pinned creator's mask) */
    public static Placement unpinned() {
        return UNPINNED;
    }

    /**
     * @param cpus the CPUs to use, slot i on {@code cpus[i % cpus.length]}
     * @return a pinning placement
     */
    public static Placement pinned(int[] cpus) {
        if (cpus.length == 0) {
            throw new IllegalArgumentException("no CPUs");
        }
        return new Placement(cpus.clone());
    }

    /** @return the slot of emitter {@code e} of a many-producer row: 0 is {@link #PRODUCER}, then 2, 3, ... */
    public static int emitter(int e) {
        return e == 0 ? PRODUCER : CONSUMER + e;
    }

    /** @return whether threads are pinned */
    public boolean pinned() {
        return cpus != null;
    }

    /** @return the CPU of {@code slot}, or -1 when unpinned */
    public int cpuOf(int slot) {
        return cpus == null ? -1 : cpus[slot % cpus.length];
    }

    /**
     * Places the calling thread: pins it to its slot's CPU, or (unpinned) puts it back on all the allowed CPUs.
     * Never throws: a failure is kept ({@link #failure()}) and the thread runs where it was.
     *
     * @return null on success, else why not
     */
    public String place(int slot) {
        if (cpus == null) {
            return Affinity.unavailable() == null ? Affinity.unpin() : null; // nothing to free where nothing pins
        }
        final String why = Affinity.pin(cpuOf(slot));
        if (why != null) {
            failure.compareAndSet(null, "cpu " + cpuOf(slot) + ": " + why);
        }
        return why;
    }

    /** @return the first pinning failure, or null */
    public String failure() {
        return failure.get();
    }

    /**
     * @param slots the threads of one row
     * @return e.g. {@code pinned: 5 threads on CPUs [0, 1]: fewer CPUs than threads, round-robin}
     */
    public String describe(int slots) {
        if (cpus == null) {
            return "unpinned: " + slots + " threads, placed by the OS scheduler";
        }
        final int[] used = new int[Math.min(slots, cpus.length)];
        for (int i = 0; i < used.length; i++) {
            used[i] = cpus[i];
        }
        return "pinned: " + slots + " threads on CPUs " + Arrays.toString(used)
                + (slots > cpus.length ? ": fewer CPUs than threads, round-robin" : ", one each");
    }
}

package dev.mighty.mailbox.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import com.sun.jna.LastErrorException;
import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;

/**
 * Thread placement for the benchmarks: pins the calling thread to one CPU with Linux
 * {@code sched_setaffinity(0, size, mask)} through JNA, and puts it back on the CPUs the process started with.
 * Everything here fails soft: on another OS, without JNA's native part, or when the kernel refuses, the answer
 * is a reason ({@link #unavailable()}, or {@link #pin}'s return value) and the thread runs unpinned.
 *
 * <p>Linux gives a new thread its creator's mask, so a thread created by a pinned thread starts pinned to the
 * same CPU: the harnesses place every thread they create explicitly ({@link ThreadCpu#factory}, {@link #unpin}).
 *
 * <h2>Threads</h2>
 * Every method acts on the calling thread only ({@code pid} 0 of {@code sched_setaffinity}) and is safe from
 * any thread.
 */
public final class Affinity {
    /** Bytes of the CPU mask passed to the kernel: 1024 CPUs, glibc's {@code cpu_set_t}. */
    static final int MASK_BYTES = 128;

    /** The part of libc used here. */
    interface CLibrary extends Library {
        int sched_setaffinity(int pid, int cpusetsize, Pointer mask) throws LastErrorException;

        int sched_getaffinity(int pid, int cpusetsize, Pointer mask) throws LastErrorException;
    }

    private static final CLibrary LIBC;
    /** Null when pinning works here, else why not. */
    private static final String UNAVAILABLE;
    /** The CPUs the process may run on, read at class initialisation (ascending); all CPUs when unavailable. */
    private static final int[] ALLOWED;

    static {
        CLibrary libc = null;
        String why = null;
        int[] allowed = null;
        final String os = System.getProperty("os.name", "?");
        if (!os.toLowerCase(Locale.ROOT).startsWith("linux")) {
            why = "not Linux (" + os + ")";
        } else {
            try {
                libc = Native.load("c", CLibrary.class);
                allowed = readMask(libc);
                if (allowed.length == 0) {
                    why = "sched_getaffinity returned an empty mask";
                }
            } catch (Throwable t) { // UnsatisfiedLinkError, LastErrorException, NoClassDefFoundError
                why = t.getClass().getSimpleName() + ": " + t.getMessage();
                libc = null;
            }
        }
        if (why != null) {
            libc = null;
            allowed = new int[Runtime.getRuntime().availableProcessors()];
            for (int i = 0; i < allowed.length; i++) {
                allowed[i] = i;
            }
        }
        LIBC = libc;
        UNAVAILABLE = why;
        ALLOWED = allowed;
    }

    private Affinity() {
    }

    /** @return null if threads can be pinned here, else why not */
    public static String unavailable() {
        return UNAVAILABLE;
    }

    /** @return the CPUs this process may run on (from {@code sched_getaffinity} at start), ascending */
    public static int[] allowedCpus() {
        return ALLOWED.clone();
    }

    /**
     * Pins the calling thread to {@code cpu}.
     *
     * @param cpu a CPU number, as the kernel numbers them
     * @return null on success, else why the thread stays where it was
     */
    public static String pin(int cpu) {
        if (UNAVAILABLE != null) {
            return UNAVAILABLE;
        }
        if (cpu < 0 || cpu >= MASK_BYTES * 8) {
            return "cpu " + cpu + " outside 0.." + (MASK_BYTES * 8 - 1);
        }
        return setMask(new int[] {cpu});
    }

    /**
     * Puts the calling thread back on every CPU the process started with (undoes {@link #pin}, and the mask a
     * thread inherits from a pinned creator).
     *
     * @return null on success, else why not
     */
    public static String unpin() {
        return UNAVAILABLE != null ? UNAVAILABLE : setMask(ALLOWED);
    }

    /** @return the CPUs the calling thread may run on now, or null when that cannot be read */
    public static int[] currentCpus() {
        if (UNAVAILABLE != null) {
            return null;
        }
        try {
            return readMask(LIBC);
        } catch (LastErrorException e) {
            return null;
        }
    }

    private static String setMask(int[] cpus) {
        final Memory mask = new Memory(MASK_BYTES);
        mask.clear();
        for (int cpu : cpus) {
            mask.setByte(cpu / 8, (byte) (mask.getByte(cpu / 8) | (1 << (cpu % 8))));
        }
        try {
            LIBC.sched_setaffinity(0, MASK_BYTES, mask);
            return null;
        } catch (LastErrorException e) {
            return "sched_setaffinity: errno " + e.getErrorCode();
        } catch (RuntimeException | Error e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static int[] readMask(CLibrary libc) {
        final Memory mask = new Memory(MASK_BYTES);
        mask.clear();
        libc.sched_getaffinity(0, MASK_BYTES, mask);
        final List<Integer> cpus = new ArrayList<>();
        for (int cpu = 0; cpu < MASK_BYTES * 8; cpu++) {
            if ((mask.getByte(cpu / 8) & (1 << (cpu % 8))) != 0) {
                cpus.add(cpu);
            }
        }
        return cpus.stream().mapToInt(Integer::intValue).toArray();
    }
}

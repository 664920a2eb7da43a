package dev.mighty.mailbox;

/**
 * Seeds for the {@code stress} twins. Without {@code -Dmailbox.stress.seed} every run explores new cases
 * ({@link System#nanoTime()}); with it (CI passes the seed it printed) a run is repeatable: each test mixes the
 * base seed with its own name, so two tests never share a sequence. The seed is printed either way, so a failure
 * in a log can be replayed.
 */
public final class StressSeed {
    private static final Long BASE = Long.getLong("mailbox.stress.seed");

    private StressSeed() {
    }

    /** The seed for {@code test}: derived from the base seed if one was given, else fresh; printed. */
    public static long of(String test) {
        final long seed = BASE == null ? System.nanoTime() : mix(BASE ^ test.hashCode());
        System.out.println("stress seed " + test + ": " + seed);
        return seed;
    }

    /** SplitMix64's finalizer: spreads nearby inputs over the whole range. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}

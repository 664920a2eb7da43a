package dev.mighty.mailbox.reliability;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A small property-based driver: generates cases from reproducible seeds, runs each, and when one fails shrinks
 * its operation list (drop halves, then quarters, ... then single operations, keeping each cut that still
 * fails) and reports the seed and the minimal failing list.
 *
 * <p>The base seed is fixed so a build is repeatable; {@code -Dmailbox.model.seed=N} (or CI's
 * {@code -Dmailbox.stress.seed=N}) explores other cases.
 */
final class RandomCases {
    static final long BASE_SEED = Long.getLong("mailbox.model.seed",
            Long.getLong("mailbox.stress.seed", 0x6d61696c626f78L));

    private RandomCases() {
    }

    /**
     * @param tries     how many cases
     * @param generate  a case's operations from a random source
     * @param rebuild   the case with another operation list (same capacity, same variant)
     * @param run       runs a case; throws {@link AssertionError} (or anything) on a mismatch
     * @param opsOf     a case's operations
     */
    static <C, O> void check(String name, int tries, Function<SplittableRandom, C> generate,
            Function<C, List<O>> opsOf, BiFunction<C, List<O>, C> rebuild, Consumer<C> run) {
        final SplittableRandom seeds = new SplittableRandom(BASE_SEED ^ name.hashCode());
        for (int i = 0; i < tries; i++) {
            final long seed = seeds.nextLong();
            final C c = generate.apply(new SplittableRandom(seed));
            final Throwable failure = failure(run, c);
            if (failure != null) {
                final C minimal = shrink(c, opsOf, rebuild, run);
                final AssertionError error = new AssertionError(name + ": case " + i + " (seed " + seed
                        + ") fails; shrunk from " + opsOf.apply(c).size() + " to " + opsOf.apply(minimal).size()
                        + " operations: " + minimal + "\nfailure of the minimal case: " + failure(run, minimal),
                        failure);
                throw error;
            }
        }
    }

    private static <C> Throwable failure(Consumer<C> run, C c) {
        try {
            run.accept(c);
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    private static <C, O> C shrink(C c, Function<C, List<O>> opsOf, BiFunction<C, List<O>, C> rebuild,
            Consumer<C> run) {
        C current = c;
        for (int chunk = Math.max(1, opsOf.apply(c).size() / 2); chunk >= 1; chunk /= 2) {
            boolean cut = true;
            while (cut) {
                cut = false;
                final List<O> ops = opsOf.apply(current);
                for (int from = 0; from < ops.size(); from += chunk) {
                    final List<O> fewer = new ArrayList<>(ops.subList(0, from));
                    fewer.addAll(ops.subList(Math.min(ops.size(), from + chunk), ops.size()));
                    final C candidate = rebuild.apply(current, fewer);
                    if (failure(run, candidate) != null) {
                        current = candidate;
                        cut = true;
                        break;
                    }
                }
            }
        }
        return current;
    }
}

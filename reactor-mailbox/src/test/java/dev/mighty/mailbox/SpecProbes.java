package dev.mighty.mailbox;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test when any spec-checking subscriber it built ({@code CheckingSubscriber}, {@code FusedProbe},
 * {@code StressSubscriber}) saw a violation, whether or not the test asserts the probe's violations itself: a
 * probe that flags an overlapping signal (§1.3) or a signal after a terminal one (§1.7) is worth nothing if
 * nobody reads what it flagged. Also fails it when an assertion inside a probe's {@code onNext} hook failed: the
 * publisher under test catches what {@code onNext} throws (§2.13), so such an assertion could otherwise never fail
 * the test.
 *
 * <p>Use: {@code @ExtendWith(SpecProbes.class)} on the test class. Every probe registers itself when it is built
 * ({@link #register}); after each test (after its {@code @AfterEach} methods) every probe registered during it is
 * checked. A probe built while no such test runs throws at once, so a test class cannot forget the extension.
 *
 * <p>Threads: probes may be built and may record violations on any thread. The registry is one per running test
 * and global, so tests that build probes run one at a time (this suite does not run JUnit in parallel; a second
 * test starting while one runs fails in {@code beforeEach} rather than mixing their probes).
 */
public final class SpecProbes implements BeforeEachCallback, AfterEachCallback {
    private static final AtomicReference<Registry> CURRENT = new AtomicReference<>();
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(SpecProbes.class);

    /** What one probe recorded: live views of its lists, read after the test; the probe itself is not kept. */
    private record Probe(String label, Collection<String> violations, Collection<? extends Throwable> hookFailures) {
    }

    private static final class Registry {
        final String test;
        final Queue<Probe> probes = new ConcurrentLinkedQueue<>();

        Registry(String test) {
            this.test = test;
        }
    }

    /**
     * Registers a probe with the running test. Any thread.
     *
     * @param probe        the probe, for its class name in failure messages (not kept)
     * @param name         a name telling probes of one test apart, or null
     * @param violations   the probe's thread-safe list of violations, read after the test
     * @param hookFailures the probe's thread-safe list of assertion errors thrown inside its hooks, read after the
     *                     test
     * @throws IllegalStateException if no test extended with {@code SpecProbes} is running
     */
    public static void register(Object probe, String name, Collection<String> violations,
            Collection<? extends Throwable> hookFailures) {
        final String label = probe.getClass().getSimpleName() + (name == null ? "" : " '" + name + "'")
                + " built at " + callSite(probe.getClass());
        final Registry registry = CURRENT.get();
        if (registry == null) {
            throw new IllegalStateException(label + " outside a test extended with @ExtendWith(SpecProbes.class):"
                    + " its violations would never be checked");
        }
        registry.probes.add(new Probe(label, violations, hookFailures));
    }

    /** @return the first stack frame outside the probe's class and this one, e.g. {@code FooTest.java:42} */
    private static String callSite(Class<?> probeClass) {
        return StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
                .walk(frames -> frames
                        .filter(f -> f.getDeclaringClass() != SpecProbes.class
                                && f.getDeclaringClass() != probeClass)
                        .findFirst()
                        .map(f -> f.getFileName() + ":" + f.getLineNumber())
                        .orElse("?"));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        final Registry registry = new Registry(context.getUniqueId());
        final Registry running = CURRENT.get();
        if (!CURRENT.compareAndSet(null, registry)) {
            throw new IllegalStateException("tests with spec probes run one at a time; still running: "
                    + (running == null ? "?" : running.test));
        }
        context.getStore(NAMESPACE).put(Registry.class, registry);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        final Registry registry = context.getStore(NAMESPACE).remove(Registry.class, Registry.class);
        if (registry == null) {
            return; // beforeEach failed
        }
        CURRENT.compareAndSet(registry, null);
        final List<String> report = new ArrayList<>();
        final List<Throwable> hookFailures = new ArrayList<>();
        for (Probe probe : registry.probes) {
            if (!probe.violations().isEmpty()) {
                report.add(probe.label() + ": " + List.copyOf(probe.violations()));
            }
            for (Throwable failure : probe.hookFailures()) {
                report.add(probe.label() + ": assertion failed inside onNext: " + failure);
                hookFailures.add(failure);
            }
        }
        if (!report.isEmpty()) {
            final AssertionError error = new AssertionError("spec probes (" + registry.probes.size()
                    + " built by the test) saw violations:\n  " + String.join("\n  ", report));
            hookFailures.forEach(error::addSuppressed);
            throw error;
        }
    }
}

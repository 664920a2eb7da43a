package dev.mighty.mailbox.tck;

import org.reactivestreams.tck.TestEnvironment;

/**
 * The timeouts every verification in this module gives the TCK, in one place.
 *
 * <p>The TCK's default of 100 ms for everything is flaky on a shared 2-core machine: a signal that is merely late
 * fails a test. A long {@link #DEFAULT_TIMEOUT_MILLIS} costs nothing on a passing run, because every
 * {@code expect*} returns as soon as the signal arrives (no test of a passing run here waits it out; it is spent
 * only when a test fails). It has to be long: 1 s was not enough at a load average of 20 on 2 cores, where the
 * TCK's own helper publisher once took longer than that to hand the test its next element.
 * {@link #NO_SIGNALS_TIMEOUT_MILLIS} is spent by every {@code expectNone} and {@code verifyNoAsyncErrors}, dozens
 * of times per class, so it is the knob for the module's run time; a shorter one can only miss a late illegal
 * signal, never fail a correct implementation. Set {@code -Dtck.debug=true} to have the TCK print every signal.
 */
final class Tck {
    /** How long an {@code expect*} waits for a signal that must come. */
    static final long DEFAULT_TIMEOUT_MILLIS = 5_000;
    /** How long {@code expectNone} / {@code verifyNoAsyncErrors} watch for a signal that must not come. */
    static final long NO_SIGNALS_TIMEOUT_MILLIS = 200;
    /**
     * How long {@code expectError} waits, in effect. Meant as the interval at which it looks again, but TCK 1.0.4
     * computes the time left as {@code remaining =- now - before} (a typo for {@code -=}; fixed upstream after the
     * release, reactive-streams-jvm PR #544), so it sleeps this long once, looks once, and fails. Hence not 20 ms:
     * an {@code onError} delivered asynchronously (the executor configuration, §3.9 tests) arrived later than that
     * under load, failed the test and leaked into the next one as an "async error". Costs 1 s per {@code expectError}
     * (three per Publisher verification).
     */
    static final long POLL_TIMEOUT_MILLIS = 1_000;
    /**
     * §3.13: how long after {@code cancel} the publisher has to drop the subscriber before the TCK runs a GC. The
     * TCK sleeps it out unconditionally, once per Publisher verification. The drain loop drops the reference when
     * it next runs, which for the executor configuration is a task on the executor's thread: at a load average of
     * about 28 on 2 cores, 500 ms once passed before that thread ran (2 of 4 loaded runs failed one spec313 test).
     */
    static final long PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS = 3_000;
    /** Capacity of the mailboxes behind the publishers: small, so producers park on full and wake often. */
    static final int CAPACITY = 16;

    private Tck() {
    }

    static TestEnvironment environment() {
        return new TestEnvironment(DEFAULT_TIMEOUT_MILLIS, NO_SIGNALS_TIMEOUT_MILLIS, POLL_TIMEOUT_MILLIS,
                Boolean.getBoolean("tck.debug"));
    }
}

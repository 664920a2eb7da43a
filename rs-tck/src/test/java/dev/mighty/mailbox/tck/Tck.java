package dev.mighty.mailbox.tck;

import org.reactivestreams.tck.TestEnvironment;

/**
 * The timeouts every verification in this module gives the TCK, in one place.
 *
 * <p>The TCK's default of 100 ms for everything is flaky on a shared 2-core machine: a signal that is merely late
 * fails a test. A longer {@link #DEFAULT_TIMEOUT_MILLIS} costs nothing on a passing run, because every
 * {@code expect*} returns as soon as the signal arrives; it is only spent by optional tests that wait for a signal
 * that never comes (the multi-subscriber ones). {@link #NO_SIGNALS_TIMEOUT_MILLIS} is spent by every
 * {@code expectNone} and {@code verifyNoAsyncErrors}, dozens of times per class, so it is the knob for the
 * module's run time. Set {@code -Dtck.debug=true} to have the TCK print every signal.
 */
final class Tck {
    /** How long an {@code expect*} waits for a signal that must come. */
    static final long DEFAULT_TIMEOUT_MILLIS = 1_000;
    /** How long {@code expectNone} / {@code verifyNoAsyncErrors} watch for a signal that must not come. */
    static final long NO_SIGNALS_TIMEOUT_MILLIS = 200;
    /** How often {@code expectError} looks again while waiting. */
    static final long POLL_TIMEOUT_MILLIS = 20;
    /** §3.13: how long after {@code cancel} the publisher has to drop the subscriber before the TCK runs a GC. */
    static final long PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS = 500;
    /** Capacity of the mailboxes behind the publishers: small, so producers park on full and wake often. */
    static final int CAPACITY = 16;

    private Tck() {
    }

    static TestEnvironment environment() {
        return new TestEnvironment(DEFAULT_TIMEOUT_MILLIS, NO_SIGNALS_TIMEOUT_MILLIS, POLL_TIMEOUT_MILLIS,
                Boolean.getBoolean("tck.debug"));
    }
}

package dev.mighty.mailbox.kafka;

/**
 * A fatal error met inside a consumer callback (a rebalance listener, a commit callback), kept until the poll that ran
 * the callback returns and then rethrown on the poll thread; the first one wins.
 * <p>Threads: the poll thread only (callbacks run inside {@code poll}, {@code commitSync} or {@code close}). Plain
 * field: confined.
 */
final class DeferredFailure {
    private RuntimeException failure;

    /** Keeps {@code e} unless a failure is kept already. */
    void set(RuntimeException e) {
        if (failure == null) {
            failure = e;
        }
    }

    /** Throws the kept failure, if any, and forgets it. */
    void rethrow() {
        final RuntimeException f = failure;
        if (f != null) {
            failure = null;
            throw f;
        }
    }

    /** @return the kept failure, or null; forgets it */
    RuntimeException take() {
        final RuntimeException f = failure;
        failure = null;
        return f;
    }
}

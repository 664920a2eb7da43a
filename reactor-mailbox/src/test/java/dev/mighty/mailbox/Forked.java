package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * A call running on its own daemon thread, for tests that park threads on purpose. Every wait is bounded
 * ({@link #WAIT}), and a thread that does not get where it should fails the test with its stack trace
 * instead of hanging it.
 *
 * @param <T> the call's result
 */
final class Forked<T> {
    /** How long a test waits for a forked thread to park or finish before it fails. */
    static final Duration WAIT = Hang.TIMEOUT;

    private final Thread thread;
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile T result;
    private volatile Throwable error;

    private Forked(String name, Callable<T> body) {
        this.thread = new Thread(() -> {
            try {
                result = body.call();
            } catch (Throwable t) {
                error = t;
            } finally {
                done.countDown();
            }
        }, name);
        thread.setDaemon(true);
    }

    /** @return a started call of {@code body} on a new daemon thread named {@code name} */
    static <T> Forked<T> start(String name, Callable<T> body) {
        final Forked<T> forked = new Forked<>(name, body);
        forked.thread.start();
        return forked;
    }

    Thread thread() {
        return thread;
    }

    /**
     * Waits until the thread is inside {@code LockSupport.park(blocker)} (the mailbox rings park with
     * themselves as blocker: pass {@code MailboxRing.of(mailbox)}).
     */
    Forked<T> awaitParkedOn(Object blocker) throws InterruptedException {
        final long deadline = System.nanoTime() + WAIT.toNanos();
        while (LockSupport.getBlocker(thread) != blocker || !isWaiting()) {
            if (done.getCount() == 0) {
                fail("%s finished before it parked: result=%s, error=%s", thread.getName(), result, error);
            }
            if (System.nanoTime() - deadline > 0) {
                fail("%s did not park on %s within %s; it is at:%n%s", thread.getName(), blocker, WAIT, stack());
            }
            Thread.sleep(1);
        }
        return this;
    }

    private boolean isWaiting() {
        final Thread.State state = thread.getState();
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
    }

    /** @return the call's result; rethrows what it threw; fails if it does not finish within {@link #WAIT} */
    T join() throws Exception {
        return join(WAIT);
    }

    /** @return the call's result; rethrows what it threw; fails if it does not finish within {@code wait} */
    T join(Duration wait) throws Exception {
        awaitDone(wait);
        final Throwable t = error;
        if (t instanceof Exception) {
            throw (Exception) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return result;
    }

    /** @return what the call threw; fails if it returned normally or does not finish within {@link #WAIT} */
    Throwable joinFailure() throws InterruptedException {
        awaitDone(WAIT);
        final Throwable t = error;
        if (t == null) {
            fail("%s returned %s instead of throwing", thread.getName(), result);
        }
        return t;
    }

    /** @return whether the call has finished */
    boolean isDone() {
        return done.getCount() == 0;
    }

    private void awaitDone(Duration wait) throws InterruptedException {
        if (!done.await(wait.toNanos(), TimeUnit.NANOSECONDS)) {
            fail("%s did not finish within %s; it is at:%n%s", thread.getName(), wait, stack());
        }
    }

    /** @return the thread's stack, one frame a line */
    String stack() {
        return Arrays.stream(thread.getStackTrace()).map(e -> "\tat " + e).collect(Collectors.joining("\n"));
    }
}

package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.ReceiverState.CLOSED;
import static dev.mighty.mailbox.kafka.ReceiverState.NEW;
import static dev.mighty.mailbox.kafka.ReceiverState.RUNNING;
import static dev.mighty.mailbox.kafka.ReceiverState.STOPPING;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The receiver's state machine ({@link ReceiverState}: NEW, RUNNING, STOPPING, CLOSED) and the first close's
 * parameters, with the two signals of its end ({@link #terminated}, {@link #closed}).
 * <p>Transitions: NEW to RUNNING by {@code start} (once); NEW to CLOSED by a close before start or a failed start;
 * RUNNING to STOPPING by the first close (after its {@link CloseRequest} won its CAS) or by the poll thread stopping
 * by itself; STOPPING (or RUNNING) to CLOSED by the poll thread's finish only. Each move is a CAS, so two closes, or a
 * close and a start, cannot both win.
 * <p>Threads: any. Visibility: the close request is published whole by its CAS before the state moves (N8: a close
 * that loses the race cannot change the winner's deadline or mode), and the poll thread reads it after it sees the
 * state leave RUNNING (or its consumer call woken).
 */
final class ReceiverLifecycle {
    /** The most of a close's timeout kept for its final commit and the consumer's close. */
    static final long FINISH_RESERVE_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final AtomicReference<ReceiverState> state = new AtomicReference<>(NEW);
    private final AtomicReference<CloseRequest> closeRequest = new AtomicReference<>();
    /** Counted down once the receiver is closed (the poll thread finished, or it never ran). */
    final CountDownLatch terminated = new CountDownLatch(1);
    /** Completed (normally) at the same moment: {@code closeAsync}'s stage. */
    final CompletableFuture<Void> closed = new CompletableFuture<>();

    ReceiverState state() {
        return state.get();
    }

    boolean isRunning() {
        return state.get() == RUNNING;
    }

    /** @return whether this call moved NEW to RUNNING (the one {@code start}) */
    boolean start() {
        return state.compareAndSet(NEW, RUNNING);
    }

    /** @return whether this call moved NEW to CLOSED (a close before {@code start}) */
    boolean closeUnstarted() {
        return state.compareAndSet(NEW, CLOSED);
    }

    /**
     * Records the first close of a running receiver and moves it to STOPPING.
     *
     * @return whether this close is the first: its caller wakes the poll thread
     */
    boolean requestClose(Duration timeout, boolean halt) {
        if (closeRequest.compareAndSet(null, new CloseRequest(saturatedNanos(timeout), halt))) {
            state.compareAndSet(RUNNING, STOPPING); // fails only if the poll thread is stopping by itself
            return true;
        }
        return false;
    }

    /** Poll thread: it stops (a close, or by itself); a close from now on only waits for it. */
    void stopping() {
        state.compareAndSet(RUNNING, STOPPING);
    }

    /** Whoever ends the receiver (the poll thread's finish, a failed start): CLOSED. */
    void closedNow() {
        state.set(CLOSED);
    }

    /** @return the first close's parameters, or null if none came (the poll thread stops by itself) */
    CloseRequest closeRequest() {
        return closeRequest.get();
    }

    /** @return whether the receiver is being halted: no waiting, no commits */
    boolean isHalted() {
        final CloseRequest request = closeRequest.get();
        return request != null && request.halted;
    }

    static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2;
        }
    }

    /** The first close's parameters, immutable. */
    static final class CloseRequest {
        /** The close's deadline ({@code System.nanoTime()}). */
        final long deadline;
        /** The end of the wait for acknowledgements: the deadline less what the commit and close keep. */
        final long ackDeadline;
        /** The thread that called close: the poll thread does not wait for acks this thread would make. */
        final Thread closer;
        /** A halt: stop without waiting and without a final commit. */
        final boolean halted;

        CloseRequest(long timeoutNanos, boolean halted) {
            final long now = System.nanoTime();
            this.deadline = now + timeoutNanos;
            this.ackDeadline = now + timeoutNanos - Math.min(timeoutNanos / 2, FINISH_RESERVE_NANOS);
            this.closer = Thread.currentThread();
            this.halted = halted;
        }
    }
}

package dev.mighty.mailbox.kafka;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * Work for the poll thread from other threads ({@code KafkaMailboxReceiver.doOnConsumer}): any thread adds, the poll
 * thread runs them at its next turn, and whoever sees the receiver closed fails what is left.
 * <p>Token rule: every task is completed exactly once, by its run or by {@link #failAll}; a task added after the
 * poll thread's last {@code runAll} is failed by the adder itself if it sees the receiver closed, else by the finish's
 * {@code failAll}, which runs after the state is CLOSED (one of the two sees the other's write). Visibility: what
 * the adder did before {@link #submit} happens-before the task runs (the queue's hand-off); what the task did
 * happens-before its stage completes.
 *
 * @param <C> the consumer type
 */
final class ConsumerTasks<C> {
    private final ConcurrentLinkedQueue<Task> tasks = new ConcurrentLinkedQueue<>();
    private final C consumer;
    private final Thread pollThread;
    private final ReceiverLifecycle lifecycle;
    private final String label;

    ConsumerTasks(C consumer, Thread pollThread, ReceiverLifecycle lifecycle, String label) {
        this.consumer = consumer;
        this.pollThread = pollThread;
        this.lifecycle = lifecycle;
        this.label = label;
    }

    /**
     * Runs {@code action} with the consumer on the poll thread: at once if called there (N6: a caller blocking on
     * the stage would otherwise wait for itself), else at its next turn.
     */
    <T> CompletionStage<T> submit(Function<? super C, ? extends T> action) {
        final CompletableFuture<T> result = new CompletableFuture<>();
        if (Thread.currentThread() == pollThread && lifecycle.isRunning()) {
            complete(result, action);
            return result;
        }
        tasks.add(new Task() {
            @Override
            public void run() {
                complete(result, action);
            }

            @Override
            public void fail(IllegalStateException closedError) {
                result.completeExceptionally(closedError);
            }
        });
        if (lifecycle.state() == ReceiverState.CLOSED) {
            failAll(); // NOTE: raced the finish: whoever drains first fails it; completion is once
        } else {
            LockSupport.unpark(pollThread);
        }
        return result;
    }

    private <T> void complete(CompletableFuture<T> result, Function<? super C, ? extends T> action) {
        try {
            result.complete(action.apply(consumer));
        } catch (Throwable t) {
            result.completeExceptionally(t);
        }
    }

    /** Poll thread: runs the tasks submitted so far. */
    void runAll() {
        Task task;
        while ((task = tasks.poll()) != null) {
            task.run();
        }
    }

    /** Any thread, once the receiver is closed: fails what is left. */
    void failAll() {
        Task task;
        while ((task = tasks.poll()) != null) {
            task.fail(new IllegalStateException("receiver closed: " + label));
        }
    }

    /** A task, with the future it completes. */
    private interface Task {
        /** Poll thread. */
        void run();

        /** Any thread, once the receiver is closed. */
        void fail(IllegalStateException closedError);
    }
}

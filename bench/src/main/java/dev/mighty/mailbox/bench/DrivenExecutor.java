package dev.mighty.mailbox.bench;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;

import dev.mighty.mailbox.internal.Backoff;
import org.jctools.queues.MpscArrayQueue;

/**
 * An {@link Executor} whose tasks run on the thread that calls {@link #runUntil}: it lets a benchmark keep
 * "one producer thread, one consumer thread" for pipelines that hop threads ({@code publishOn},
 * {@code SubmissionPublisher}), the consumer thread being the one that drives this executor. No extra thread
 * competes for the two cores.
 *
 * <h2>Threads</h2>
 * {@link #execute} may be called by any thread; {@link #runUntil} and {@link #runPending} by one thread at a
 * time (the consumer).
 *
 * <h2>Progress</h2>
 * {@code execute} is lock-free (a JCTools {@link MpscArrayQueue} offer); {@code runUntil} busy-waits, calling
 * the given {@link Idle} between empty polls.
 *
 * <h2>Visibility</h2>
 * Everything a thread did before {@code execute(task)} happens-before the task runs (the queue's release
 * store of the element pairs with the acquire in its poll).
 */
public final class DrivenExecutor implements Executor {
    /** Pending-task bound: pipelines schedule at most a few drain tasks at a time. */
    static final int MAX_PENDING = 1024;

    private final MpscArrayQueue<Runnable> tasks = new MpscArrayQueue<>(MAX_PENDING);

    /** What the driving thread does when there is no task to run. */
    @FunctionalInterface
    public interface Idle {
        /**
         * Called between empty polls; may throw to abandon the wait.
         *
         * @param spins how many times it was called since the last task ran
         * @return the next value of {@code spins} (usually {@code spins + 1})
         */
        int idle(int spins) throws InterruptedException;

        /** Spin-waits {@link #spinThenYield} takes, in bursts of {@link Backoff#SPIN_BURST}, before it yields. */
        int SPINS = 100;

        /** Steps of {@link #spinThenYield} that spin: {@link #SPINS} spin-waits in bursts (the last rounds up). */
        int SPIN_STEPS = (SPINS + Backoff.SPIN_BURST - 1) / Backoff.SPIN_BURST;

        /**
         * One step of the harness's own busy waits, in the CLI ({@code Workload.idle}) and in JMH
         * ({@code OneToOneState.backoff}): about {@value #SPINS} {@link Thread#onSpinWait()} in bursts of
         * {@link Backoff#SPIN_BURST}, then a {@link Thread#yield()} per step (JCTools' and Agrona's spin-then-yield
         * idle strategies). On a 2-vCPU machine shared with other work a pure spin can hold the very core the other
         * thread needs for a whole time slice, so the spin budget stays short: a wait that spun 16 times as long
         * before its first yield (a burst per step for 100 steps) halved the pinned executor-publisher and
         * processor rows, whose harness consumer waits on the CPU the executor's worker needs. The wait looks at its
         * ring once per burst, as the library's waits do, and for the same reason: a consumer that looks after
         * every spin-wait takes a busy producer's elements one at a time, and each take pulls the cache line the
         * producer is filling back across cores; measured, that made the bare JCTools {@code MpscArrayQueue} row
         * slower in JMH (32 against 8–15 ns/op, pinned) and in two of three pinned CLI pairs (26.0, 21.1, 15.2
         * against 18.1, 17.0, 16.6 ns/msg; docs/benchmarks-log.md, "The spin burst"). Each comparator is measured
         * on its fastest wait.
         *
         * @param step how many steps this wait has taken so far
         */
        static void spinThenYield(int step) {
            if (step < SPIN_STEPS) {
                for (int i = Backoff.SPIN_BURST; i > 0; i--) {
                    Thread.onSpinWait();
                }
            } else {
                Thread.yield();
            }
        }
    }

    /**
     * @throws RejectedExecutionException if {@value #MAX_PENDING} tasks are pending (a pipeline bug)
     */
    @Override
    public void execute(Runnable task) {
        if (!tasks.offer(Objects.requireNonNull(task, "task"))) {
            throw new RejectedExecutionException("pending tasks: " + MAX_PENDING + " (expected: fewer)");
        }
    }

    /**
     * Runs tasks on the calling thread until {@code done} answers true (checked between tasks and whenever the
     * queue is empty). Semantically similar to:
     * <pre>{@code
     * for (int spins = 0; !done.getAsBoolean(); ) {
     *     Runnable task = tasks.poll();
     *     if (task != null) { task.run(); spins = 0; } else spins = idle.idle(spins);
     * }
     * }</pre>
     */
    public void runUntil(BooleanSupplier done, Idle idle) throws InterruptedException {
        final MpscArrayQueue<Runnable> tasks = this.tasks;
        for (int spins = 0; !done.getAsBoolean(); ) {
            final Runnable task = tasks.poll();
            if (task != null) {
                task.run();
                spins = 0;
            } else {
                spins = idle.idle(spins);
            }
        }
    }

    /** Runs the tasks pending now (and those they schedule) on the calling thread; returns how many ran. */
    public int runPending() {
        int n = 0;
        for (Runnable task; (task = tasks.poll()) != null; n++) {
            task.run();
        }
        return n;
    }
}

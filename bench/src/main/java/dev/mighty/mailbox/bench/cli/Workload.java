package dev.mighty.mailbox.bench.cli;

import dev.mighty.mailbox.bench.DrivenExecutor;

/**
 * One implementation measured by the CLI: a bounded channel between the harness's producer thread and its
 * consumer thread, kept open for the whole run. Each iteration sends messages {@code 0 .. n-1} in order and
 * receives them all; the consumer checks the count and the order, so a broken channel fails the run instead
 * of looking fast.
 *
 * <h2>Threads</h2>
 * {@link #open} and {@link #consume} run on the consumer thread, {@link #produce}, {@link #stats} and
 * {@link #close} on the producer thread. The harness orders them: {@code open} happens-before the first
 * {@code produce}, and each iteration's {@code consume} returns before the next iteration starts.
 *
 * <p>Waiting loops (a full or empty channel polled without parking) call {@link #idle()}, which gives way to
 * the other thread and turns an abort (the harness interrupts a thread whose peer failed) into an exception.
 */
interface Workload {

    /** Consumer thread, once, before the first iteration: create subscriptions here. */
    default void open() throws Exception {
    }

    /**
     * Consumer thread, before each iteration's start signal (so before the producer sends anything): rows whose
     * messages are received on another thread arm their check here.
     */
    default void prepare(int n) {
    }

    /** Producer thread: sends the {@code n} messages of one iteration, in order. */
    void produce(int n) throws Exception;

    /**
     * Consumer thread: receives the {@code n} messages of one iteration.
     *
     * @throws IllegalStateException if a message is missing, extra or out of order
     */
    void consume(int n) throws Exception;

    /**
     * @return the {@link System#nanoTime()} at which the thread that received the iteration's last message
     *         received it, or 0 to let the harness take the time when {@link #consume} returns. Rows that receive
     *         on another thread answer this, so the harness thread's own wake-up is not measured.
     */
    default long finishedAt() {
        return 0L;
    }

    /**
     * @return the thread that ran {@code onNext} last (an executor's or scheduler's thread, or the producer in
     *         trampoline mode), or null when the harness's consumer thread receives; read after an iteration
     */
    default Thread deliveringThread() {
        return null;
    }

    /**
     * @return whether the harness's consumer thread receives (true), or only waits for the row's own delivering
     *         thread (false: its CPU is the harness's, not the row's, and is left out of the row's CPU per message)
     */
    default boolean receivesOnHarnessConsumer() {
        return true;
    }

    /**
     * @return the name prefix of threads that work for this row but are not the harness's to make (a runtime's
     *         dispatcher), counted in its CPU time when alive at the start of the measured phase; or null
     */
    default String foreignThreadPrefix() {
        return null;
    }

    /**
     * @return the mailbox's wake-ups so far ({@code consumerParks + producerParks}: parks and wake-up
     *         registrations, cumulative), or -1 for a comparator; producer thread, between iterations
     */
    default long wakeups() {
        return -1L;
    }

    /** @return a one-line counter summary (mailbox rows: {@code stats()}), or null */
    default String stats() {
        return null;
    }

    /** Producer thread, once, after the last iteration: close the channel. */
    default void close() {
    }

    /**
     * One step of a busy wait: {@link DrivenExecutor.Idle#spinThenYield}, then the harness's abort check.
     *
     * @param spins how many steps this wait has taken so far
     * @return {@code spins + 1}
     * @throws InterruptedException if the harness aborts the run (the peer thread failed)
     */
    static int idle(int spins) throws InterruptedException {
        DrivenExecutor.Idle.spinThenYield(spins);
        if (Thread.interrupted()) {
            throw new InterruptedException("aborted by the harness");
        }
        return spins + 1;
    }
}

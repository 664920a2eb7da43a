package dev.mighty.mailbox.bench.cli;

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

    /** Producer thread: sends the {@code n} messages of one iteration, in order. */
    void produce(int n) throws Exception;

    /**
     * Consumer thread: receives the {@code n} messages of one iteration.
     *
     * @throws IllegalStateException if a message is missing, extra or out of order
     */
    void consume(int n) throws Exception;

    /**
     * Producer thread, after each iteration: the iteration's time. By default the consumer thread's, from the
     * start signal to its last message; a row whose messages are received elsewhere (on another runtime's
     * threads) measures the same span itself, from the start of its {@link #produce} to the last receive there.
     *
     * @param consumerNanos the consumer thread's time for the iteration
     */
    default long elapsedNanos(long consumerNanos) {
        return consumerNanos;
    }

    /** @return a one-line counter summary (mailbox rows: {@code stats()}), or null */
    default String stats() {
        return null;
    }

    /** Producer thread, once, after the last iteration: close the channel. */
    default void close() {
    }

    /** Busy-wait steps spent in {@link Thread#onSpinWait()} before {@link #idle} starts to yield. */
    int SPINS = 100;

    /**
     * One step of a busy wait: {@link Thread#onSpinWait()} for the first {@value #SPINS} steps, then
     * {@link Thread#yield()} (JCTools' and Agrona's spin-then-yield idle strategies). On a 2-vCPU machine shared
     * with other work a pure spin can hold the very core the other thread needs for a whole time slice.
     *
     * @param spins how many steps this wait has taken so far
     * @return {@code spins + 1}
     * @throws InterruptedException if the harness aborts the run (the peer thread failed)
     */
    static int idle(int spins) throws InterruptedException {
        if (spins < SPINS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
        if (Thread.interrupted()) {
            throw new InterruptedException("aborted by the harness");
        }
        return spins + 1;
    }
}

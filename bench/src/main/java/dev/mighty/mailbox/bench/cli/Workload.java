package dev.mighty.mailbox.bench.cli;

import dev.mighty.mailbox.internal.Backoff;

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

    /** Spin-waits {@link #idle} takes, in bursts of {@link Backoff#SPIN_BURST}, before it starts to yield. */
    int SPINS = 100;

    /** Steps of {@link #idle} that spin: {@link #SPINS} spin-waits in bursts (the last one rounds it up). */
    int SPIN_STEPS = (SPINS + Backoff.SPIN_BURST - 1) / Backoff.SPIN_BURST;

    /**
     * One step of a busy wait: about {@value #SPINS} {@link Thread#onSpinWait()} in bursts of
     * {@link Backoff#SPIN_BURST}, then {@link Thread#yield()} (JCTools' and Agrona's spin-then-yield idle
     * strategies). On a 2-vCPU machine shared with other work a pure spin can hold the very core the other thread
     * needs for a whole time slice, so the spin budget stays short: a wait that spun 16 times as long before its
     * first yield (a burst per step for 100 steps) halved the pinned executor-publisher and processor rows, whose
     * harness consumer waits on the CPU the executor's worker needs. The wait looks at its ring once per burst, as
     * the library's waits do, and for the same reason: a
     * consumer that looks after every spin-wait takes a busy producer's elements one at a time, and each take pulls
     * the cache line the producer is filling back across cores; measured, that made the bare JCTools
     * {@code MpscArrayQueue} row slower in JMH (32 against 8–15 ns/op, pinned) and in two of three pinned CLI pairs
     * (26.0, 21.1, 15.2 against 18.1, 17.0, 16.6 ns/msg; docs/benchmarks-log.md, "The spin burst"). Each comparator
     * is measured on its fastest wait.
     *
     * @param spins how many steps this wait has taken so far
     * @return {@code spins + 1}
     * @throws InterruptedException if the harness aborts the run (the peer thread failed)
     */
    static int idle(int spins) throws InterruptedException {
        if (spins < SPIN_STEPS) {
            for (int i = Backoff.SPIN_BURST; i > 0; i--) {
                Thread.onSpinWait();
            }
        } else {
            Thread.yield();
        }
        if (Thread.interrupted()) {
            throw new InterruptedException("aborted by the harness");
        }
        return spins + 1;
    }
}

package dev.mighty.mailbox.bench.cli;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.bench.Placement;

/**
 * The CLI's two threads: the thread that creates the harness is the producer (and runs the schedule), a
 * daemon thread it starts is the consumer. Every workload of a run uses the same two threads, so the
 * implementations meet the same pair of cores and the same cache-line round trip, which
 * {@link #pingPongNanos} measures.
 *
 * <h2>Threads</h2>
 * Every method is called by the producer thread only; the consumer thread runs what it is handed.
 *
 * <h2>Progress</h2>
 * One job at a time, in handshakes: the producer publishes a job and wakes the consumer; both spin until
 * the other is ready; the producer produces while the consumer consumes (an iteration is timed from just
 * before the start signal to the last receipt); the producer spins (then yields) until the consumer is done.
 * Between jobs the consumer spins briefly, then parks.
 * A thread whose peer fails is interrupted (waiting loops call {@link Workload#idle(int)}), and a job that
 * does not end within {@link #JOB_TIMEOUT_NANOS} fails the run.
 *
 * <h2>Visibility</h2>
 * The job fields are written before the volatile store of {@code generation} and read after the consumer's
 * volatile read of it; the results are written before the volatile store of {@code done} and read after the
 * producer's volatile read of it.
 */
final class TwoThreadHarness implements AutoCloseable {
    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();
    /** A job that runs longer than this fails the run (a hung channel must not look like a slow one). */
    static final long JOB_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** Waits spin this many times, then yield (two threads spinning on two shared cores starve the JIT). */
    private static final int SPINS = 1_000;
    /** Consumer waits this long (spinning, then yielding) for the next job before parking. */
    private static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private static final int OP_OPEN = 1;
    private static final int OP_ITERATE = 2;
    private static final int OP_PING_PONG = 3;
    private static final int OP_STOP = 4;
    /** Ping-pong spins before yielding: far more than a round trip takes while both threads are on a core. */
    private static final int PING_PONG_SPINS = 20_000;
    /** Index of the ping-pong word in {@link #line}: 128 bytes of unused longs on each side of it. */
    private static final int PING = 16;

    private final Thread producer;
    private final Thread consumer;
    private final AtomicLongArray line = new AtomicLongArray(2 * PING);

    private volatile long generation;
    private volatile long ready;
    private volatile long go;
    private volatile long done;
    private volatile boolean sleeping;

    // the job: written by the producer before 'generation'
    private int op;
    private Workload workload;
    private int count;
    // the result: written by the consumer before 'done'
    private long consumerEnd;
    private long consumerCpuNanos;
    private Throwable failure;
    // producer thread only
    private long producerCpuNanos = -1L;
    private final Placement placement;

    /** An unpinned harness. */
    TwoThreadHarness() {
        this(Placement.unpinned());
    }

    /**
     * @param placement where the two threads go: this (producer) thread is placed now, in slot
     *                  {@link Placement#PRODUCER}, the consumer thread when it starts, in {@link Placement#CONSUMER}
     */
    TwoThreadHarness(Placement placement) {
        this.placement = placement;
        this.producer = Thread.currentThread();
        placement.place(Placement.PRODUCER);
        this.consumer = new Thread(() -> {
            placement.place(Placement.CONSUMER);
            consumerLoop();
        }, "mailbox-bench-consumer");
        this.consumer.setDaemon(true);
        this.consumer.start();
    }

    /** @return the consumer thread's id */
    long consumerId() {
        return consumer.getId();
    }

    /** @return the consumer thread */
    Thread consumerThread() {
        return consumer;
    }

    /** @return the CPU time the consumer thread spent in the last iteration's {@code consume}, or -1 */
    long lastConsumerCpuNanos() {
        return consumerCpuNanos;
    }

    /**
     * @return the CPU time the producer thread spent in the last iteration's {@code produce} (not in the harness's
     *         wait for the consumer that follows it), or -1
     */
    long lastProducerCpuNanos() {
        return producerCpuNanos;
    }

    /** @return where the two threads are */
    Placement placement() {
        return placement;
    }

    /** Runs {@code workload.open()} on the consumer thread. */
    void open(Workload workload) throws Exception {
        final long gen = submit(OP_OPEN, workload, 0);
        go = gen;
        awaitDone(gen);
    }

    /**
     * Runs one iteration: the producer (this thread) sends {@code n} messages while the consumer receives them.
     *
     * @return nanoseconds from just before the start signal to the receipt of the last message
     */
    long iterate(Workload workload, int n) throws Exception {
        final long gen = submit(OP_ITERATE, workload, n);
        awaitReady(gen);
        final long producerStart = System.nanoTime();
        final long cpu = CPU.isCurrentThreadCpuTimeSupported() ? CPU.getCurrentThreadCpuTime() : -1L;
        go = gen;
        Throwable produceFailure = null;
        try {
            workload.produce(n);
        } catch (Throwable t) {
            produceFailure = t;
            consumer.interrupt();
        }
        producerCpuNanos = cpu < 0 ? -1L : CPU.getCurrentThreadCpuTime() - cpu;
        awaitDone(gen);
        if (produceFailure != null) {
            throw new IllegalStateException("producer failed", produceFailure);
        }
        // Every row is timed the same way: from the moment the producer may start (just before the start signal)
        // to the receipt of the last message, on whichever thread received it (a row that receives on another
        // thread reports that moment; otherwise the consumer thread's end of consume()). A consumer that starts
        // late (descheduled on a busy machine) therefore counts against its row instead of handing it a
        // pre-filled mailbox. Pairs with the volatile read of done in awaitDone().
        final long finishedAt = workload.finishedAt();
        return Math.max(1L, (finishedAt != 0L ? finishedAt : consumerEnd) - producerStart);
    }

    /**
     * The calibration: one cache line bounced between the two threads {@code rounds} times.
     *
     * @return nanoseconds per round trip (two cache-line transfers)
     */
    double pingPongNanos(int rounds) throws Exception {
        final long gen = submit(OP_PING_PONG, null, rounds);
        awaitReady(gen);
        final AtomicLongArray line = this.line;
        line.set(PING, 0L);
        go = gen;
        final long start = System.nanoTime();
        for (long i = 0; i < rounds; i++) {
            line.set(PING, 2 * i + 1); // pairs with the consumer's get() in pong()
            for (int spins = 0; line.get(PING) != 2 * i + 2; spins++) {
                pingPongBackoff(spins);
            }
        }
        final long elapsed = System.nanoTime() - start;
        awaitDone(gen);
        return (double) elapsed / rounds;
    }

    /**
     * Spins; after {@value #PING_PONG_SPINS} spins the peer is surely descheduled (a round trip is well under a
     * microsecond when both threads run), so yield rather than burn the core it needs.
     */
    private static void pingPongBackoff(int spins) {
        if (spins < PING_PONG_SPINS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    /** Stops the consumer thread (a daemon: a consumer stuck in a failed job does not keep the JVM alive). */
    @Override
    public void close() {
        submit(OP_STOP, null, 0);
        try {
            consumer.join(TimeUnit.SECONDS.toMillis(1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private long submit(int op, Workload workload, int count) {
        if (Thread.currentThread() != producer) {
            throw new IllegalStateException("harness used from " + Thread.currentThread().getName()
                    + " (expected: " + producer.getName() + ")");
        }
        Thread.interrupted(); // a late abort signal from a finished job
        this.op = op;
        this.workload = workload;
        this.count = count;
        this.failure = null;
        final long gen = generation + 1;
        generation = gen; // pairs with the consumer's read of generation in awaitJob()
        if (sleeping) { // Dekker with the consumer's sleeping = true, then generation read: no lost wake-up
            LockSupport.unpark(consumer);
        }
        return gen;
    }

    private void awaitReady(long gen) {
        final long deadline = System.nanoTime() + JOB_TIMEOUT_NANOS;
        for (int spins = 0; ready != gen; spins++) {
            backoff(spins);
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("consumer thread did not start the job: alive=" + consumer.isAlive());
            }
        }
    }

    private void awaitDone(long gen) throws Exception {
        final long start = System.nanoTime();
        for (int spins = 0; done != gen; spins++) {
            if (spins < SPINS || System.nanoTime() - start < JOB_TIMEOUT_NANOS) {
                backoff(spins);
            } else {
                consumer.interrupt();
                throw new IllegalStateException("job timed out after " + JOB_TIMEOUT_NANOS / 1_000_000_000L
                        + " s: op=" + op + ", count=" + count + ", consumer=" + consumer.getState());
            }
        }
        Thread.interrupted(); // the consumer may have interrupted us on its way out
        final Throwable t = failure;
        if (t instanceof Exception) {
            throw (Exception) t;
        }
        if (t != null) {
            throw new IllegalStateException("consumer failed", t);
        }
    }

    // ------------------------------------------------------------------ consumer thread

    private void consumerLoop() {
        long seen = 0;
        for (;;) {
            final long gen = awaitJob(seen);
            seen = gen;
            final int op = this.op;
            if (op == OP_STOP) {
                return;
            }
            Thread.interrupted();
            if (op == OP_ITERATE) {
                try {
                    workload.prepare(count); // before ready: happens-before the producer's first send
                } catch (Throwable t) {
                    failure = t;
                    producer.interrupt();
                }
            }
            ready = gen;
            for (int spins = 0; go != gen; spins++) {
                backoff(spins);
            }
            try {
                if (op == OP_ITERATE) {
                    final long cpu = CPU.isCurrentThreadCpuTimeSupported() ? CPU.getCurrentThreadCpuTime() : -1L;
                    if (failure == null) {
                        workload.consume(count);
                    }
                    consumerEnd = System.nanoTime();
                    consumerCpuNanos = cpu < 0 ? -1L : CPU.getCurrentThreadCpuTime() - cpu;
                } else if (op == OP_OPEN) {
                    workload.open();
                } else if (op == OP_PING_PONG) {
                    pong(count);
                }
            } catch (Throwable t) {
                failure = t;
                producer.interrupt();
            }
            done = gen; // pairs with the producer's read of done in awaitDone()
        }
    }

    private static void backoff(int spins) {
        if (spins < SPINS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }

    private void pong(int rounds) {
        final AtomicLongArray line = this.line;
        for (long i = 0; i < rounds; i++) {
            for (int spins = 0; line.get(PING) != 2 * i + 1; spins++) {
                pingPongBackoff(spins);
            }
            line.set(PING, 2 * i + 2);
        }
    }

    private long awaitJob(long seen) {
        final long start = System.nanoTime();
        long gen;
        for (int spins = 0; (gen = generation) == seen; spins++) {
            if (spins < SPINS || System.nanoTime() - start < IDLE_NANOS) {
                backoff(spins);
                continue;
            }
            sleeping = true;
            if (generation == seen) {
                LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(10));
            }
            sleeping = false;
        }
        return gen;
    }
}

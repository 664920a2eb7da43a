package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.bench.Affinity;
import dev.mighty.mailbox.bench.DrivenExecutor;
import dev.mighty.mailbox.bench.Placement;
import dev.mighty.mailbox.bench.ThreadCpu;

import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.Control;

/**
 * Base of the one-producer/one-consumer states: a channel, and a producer thread that sends
 * {@link #MESSAGES} messages each time the benchmark thread (the consumer) calls {@link #request()}.
 * A benchmark operation is then: request a batch, receive {@link #MESSAGES} messages, report them with
 * {@link #received(int)}.
 *
 * <h2>Threads</h2>
 * The fixture methods, {@link #request()}, {@link #received(int)} and {@link #stalled(Control, int)} run on the
 * benchmark thread; {@link #produce(int)} on the producer thread.
 *
 * <h2>Progress</h2>
 * Between batches the producer spins, yields, then parks ({@link #PRODUCER_IDLE_NANOS}); a consumer loop
 * that polls without parking must call {@link #stalled(Control, int)} when it finds nothing, which throws if
 * the producer failed and answers {@code Control.stopMeasurement} (JMH sample 18) so a stuck loop ends
 * with the iteration. Whatever an operation cut short left behind is drained at the end of the iteration.
 *
 * <h2>Placement</h2>
 * With {@code -Dmailbox.bench.pin=true} in the forks ({@code -jvmArgsAppend -Dmailbox.bench.pin=true}) the producer
 * is pinned to the first allowed CPU and the benchmark thread to the second ({@link Placement}, as the CLI's
 * {@code --pin}); a state whose messages are received by its own executor or scheduler worker makes that thread with
 * {@link #receiverThreads}, which pins it to the benchmark thread's CPU (the benchmark thread then only waits).
 * Where pinning is unavailable a line on stderr says why and everything runs unpinned.
 *
 * <h2>Visibility</h2>
 * {@code request()} is a volatile store read by the producer before it sends; the channel orders the rest.
 */
public abstract class OneToOneState {
    /** Messages per operation (the reference microbenchmark's size). */
    public static final int MESSAGES = 10_000;
    /** Capacity of every channel. */
    public static final int CAPACITY = 1024;
    /** The "empty payload" message. */
    protected static final Object MESSAGE = new Object();
    /** Producer waits for the next request this long, spinning then yielding, before it parks. */
    static final long PRODUCER_IDLE_NANOS = TimeUnit.MICROSECONDS.toNanos(50);

    /** Where the forks put the producer and the receiving thread: {@code -Dmailbox.bench.pin=true} pins them. */
    static final Placement PLACEMENT = placement();

    private Thread producer;
    private volatile long requested;
    private volatile long produced;
    private volatile boolean parked;
    private volatile boolean stopped;
    private volatile Throwable failure;
    /** Benchmark thread only. */
    private long received;

    /** Creates the channel. Benchmark thread, before the producer starts. */
    protected abstract void open() throws Exception;

    /** Sends {@code n} messages. Producer thread. */
    protected abstract void produce(int n) throws Exception;

    /** Receives what is there now, without waiting: the end-of-iteration drain. Benchmark thread. */
    protected abstract int drainNow();

    /** Called on the producer thread when {@link #produce} threw: unblock the consumer (e.g. close the channel). */
    protected void producerFailed(Throwable t) {
    }

    /** Closes the channel. Benchmark thread, after the producer stopped. */
    protected void close() {
    }

    private static Placement placement() {
        if (!Boolean.getBoolean("mailbox.bench.pin")) {
            return Placement.unpinned();
        }
        final String why = Affinity.unavailable();
        if (why != null) {
            System.err.println("pinning unavailable: " + why + " (running unpinned)");
            return Placement.unpinned();
        }
        return Placement.pinned(Affinity.allowedCpus());
    }

    /**
     * @param name the threads' name
     * @return daemon threads on the receiving thread's CPU when pinned (an executor's or a scheduler's worker that
     *         runs {@code onNext}), else placed by the OS
     */
    public static ThreadFactory receiverThreads(String name) {
        return new ThreadCpu(PLACEMENT).factory(name, Placement.CONSUMER);
    }

    @Setup(Level.Trial)
    public final void startProducer() throws Exception {
        if (PLACEMENT.pinned()) {
            PLACEMENT.place(Placement.CONSUMER); // the benchmark thread: the consumer, or the waiter beside the worker
        }
        open();
        producer = new Thread(this::producerLoop, getClass().getSimpleName() + "-producer");
        producer.setDaemon(true);
        producer.start();
    }

    /** Drains what an operation cut short by {@code stopMeasurement} left behind, so the next one starts clean. */
    @TearDown(Level.Iteration)
    public final void resync() {
        final long expected = requested * MESSAGES;
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (received < expected) {
            final int n = drainNow();
            received += n;
            if (n == 0) {
                checkProducer();
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("iteration end: received=" + received + ", expected=" + expected);
                }
                Thread.yield();
            }
        }
    }

    @TearDown(Level.Trial)
    public final void stopProducer() throws InterruptedException {
        stopped = true;
        producer.interrupt();
        producer.join(TimeUnit.SECONDS.toMillis(10));
        close();
        checkProducer();
    }

    /** Asks the producer for {@link #MESSAGES} more messages. Benchmark thread, once per operation. */
    protected final void request() {
        requested = requested + 1; // pairs with the producer's read of requested
        if (parked) {
            LockSupport.unpark(producer);
        }
    }

    /** Counts what an operation received. Benchmark thread. */
    protected final void received(int n) {
        received += n;
    }

    /**
     * For consumer loops that found nothing: spins with {@link Thread#onSpinWait()}, then yields (on 2 shared
     * cores a pure spin can hold the core the producer needs), the same backoff as {@link #producerIdle}.
     *
     * @param spins how many empty polls in a row, counting this one
     * @return true if the measurement has stopped: leave the loop (the iteration's end drains the rest)
     * @throws IllegalStateException if the producer failed
     */
    protected final boolean stalled(Control control, int spins) {
        checkProducer();
        backoff(spins);
        return control.stopMeasurement;
    }

    /** One non-blocking receive of at most {@code max} messages out of {@code state}'s channel. */
    @FunctionalInterface
    interface SpinReceive<S extends OneToOneState> {
        int receive(S state, int max);
    }

    /**
     * One operation of a spinning consumer: requests a batch, then calls {@code receive} until it has taken
     * {@link #MESSAGES}, backing off with {@link #stalled} on an empty call. Pass a non-capturing lambda (it is then
     * one instance for the run: nothing is allocated per operation). Benchmark thread.
     *
     * @return the messages taken (fewer only if the measurement stopped)
     */
    static <S extends OneToOneState> int spinReceive(S state, Control control, SpinReceive<S> receive) {
        state.request();
        int n = 0;
        for (int spins = 0; n < MESSAGES; ) {
            final int k = receive.receive(state, MESSAGES - n);
            if (k != 0) {
                n += k;
                spins = 0;
            } else if (state.stalled(control, spins++)) {
                break;
            }
        }
        state.received(n);
        return n;
    }

    /**
     * One step of the harness's own waits (a comparator's consumer on an empty ring, a producer on a full one): the
     * CLI's step, {@link DrivenExecutor.Idle#spinThenYield} (bursts of spin-waits, then yields), kept out of line
     * so that it costs the same for every channel. The mailbox's own waits are its policy's, in the same bursts.
     */
    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static void backoff(int spins) {
        DrivenExecutor.Idle.spinThenYield(spins);
    }

    private void checkProducer() {
        final Throwable t = failure;
        if (t != null) {
            throw new IllegalStateException("producer failed", t);
        }
    }

    /**
     * A producer's wait on a full channel: spin, then yield; throws once the trial is over.
     *
     * @return {@code spins + 1}
     */
    protected static int producerIdle(int spins) throws InterruptedException {
        backoff(spins);
        if (Thread.interrupted()) {
            throw new InterruptedException("trial over");
        }
        return spins + 1;
    }

    private void producerLoop() {
        if (PLACEMENT.pinned()) {
            PLACEMENT.place(Placement.PRODUCER);
        }
        long done = 0;
        try {
            while (!stopped) {
                if (requested > done) {
                    produce(MESSAGES);
                    produced = ++done;
                    continue;
                }
                final long start = System.nanoTime();
                for (int spins = 0; requested == done && !stopped; spins++) {
                    if (spins < 1_000) {
                        Thread.onSpinWait();
                    } else if (System.nanoTime() - start < PRODUCER_IDLE_NANOS) {
                        Thread.yield();
                    } else {
                        parked = true;
                        if (requested == done && !stopped) { // Dekker with request(): no lost wake-up
                            LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(1));
                        }
                        parked = false;
                    }
                }
            }
        } catch (InterruptedException e) {
            if (!stopped) {
                failure = e;
                producerFailed(e);
            }
        } catch (Throwable t) {
            failure = t;
            producerFailed(t);
        }
    }

    /** @return batches the producer has finished (for diagnostics) */
    public final long produced() {
        return produced;
    }
}

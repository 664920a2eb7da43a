package dev.mighty.mailbox.bench.cli;

import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

import dev.mighty.mailbox.bench.PekkoInbox;

/**
 * A row over Apache Pekko ({@link PekkoInbox}): the producer thread {@code tell}s or {@code offer}s; the actor
 * (or the stream) checks every message on Pekko's default dispatcher, and the consumer thread waits until the
 * actor has received the iteration's last message.
 *
 * <p>The iteration ends at the actor's receipt of the last message ({@link #finishedAt}), so the row is timed as
 * every other: from just before the start signal to the last receipt. The consumer thread's own clock would be
 * wrong here: when Pekko's woken thread preempts it before it has seen the start signal, the actor can receive
 * the whole batch before that clock starts.
 *
 * <p>Since its clock does not count, the consumer thread waits without holding a core: {@value #WAIT_SPINS}
 * spins, then {@value #WAIT_PARK_NANOS} ns parks. The two cores are left to the producer and Pekko's thread,
 * as they are for a Pekko user; a thread spinning and yielding beside them took a third of a core from the
 * actor and made {@code Source.queue} look 5x slower at 10,000 messages per iteration.
 */
final class PekkoRow implements Workload {
    static final String ACTOR = "pekko_actor_mailbox_throughput";
    static final String SOURCE_QUEUE = "pekko_source_queue_mailbox_throughput";

    /** The consumer thread's wait: spins before it parks. */
    static final int WAIT_SPINS = 100;
    /** The consumer thread's wait: one park, in nanoseconds (its wake-up is not in the measured time). */
    static final long WAIT_PARK_NANOS = 20_000;

    private final PekkoInbox inbox;
    private final Integer[] payload;
    private final int messages;
    /** Consumer thread only: the batches received so far. */
    private int consumed;
    /** The actor system's name: its dispatcher threads' names start with it. */
    private final String system;

    private PekkoRow(String system, PekkoInbox inbox, Workloads.Setup s) {
        this.system = system;
        this.inbox = inbox;
        this.payload = s.payload();
        this.messages = s.messages();
    }

    /** @return the factory of {@value #ACTOR}: a typed actor, default dispatcher, default (unbounded) mailbox */
    static Function<Workloads.Setup, Workload> actor() {
        return s -> new PekkoRow("pekko-actor-mailbox", PekkoInbox.actor("pekko-actor-mailbox", s.messages()), s);
    }

    /** @return the factory of {@value #SOURCE_QUEUE}: {@code Source.queue(capacity)} into {@code Sink.foreach} */
    static Function<Workloads.Setup, Workload> sourceQueue() {
        return s -> new PekkoRow("pekko-source-queue", PekkoInbox.sourceQueue("pekko-source-queue", s.capacity(),
                s.messages()), s);
    }

    @Override
    public void produce(int n) throws InterruptedException {
        checkSize(n);
        inbox.send(payload, n, Workload::idle);
    }

    /**
     * Producer thread, after the consumer thread saw the batch complete (which published its end time): the moment
     * the actor (or the stream's sink) received the batch's last message, so the harness times the row from just
     * before the start signal to that receipt, as every other row.
     */
    @Override
    public long finishedAt() {
        return inbox.lastBatchEndNanos();
    }

    @Override
    public void consume(int n) throws InterruptedException {
        checkSize(n);
        final int target = ++consumed;
        final PekkoInbox inbox = this.inbox;
        for (int spins = 0; inbox.completedBatches() < target; spins++) {
            if (spins < WAIT_SPINS) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(this, WAIT_PARK_NANOS);
            }
            if (Thread.interrupted()) {
                throw new InterruptedException("aborted by the harness");
            }
        }
        inbox.checkFailure();
    }

    private void checkSize(int n) {
        if (n != messages) {
            throw new IllegalArgumentException("n: " + n + " (expected: " + messages + ", the batch the check expects)");
        }
    }

    @Override
    public String foreignThreadPrefix() {
        return system + "-";
    }

    @Override
    public boolean receivesOnHarnessConsumer() {
        return false; // it waits for Pekko's threads
    }

    @Override
    public void close() {
        inbox.close();
    }
}

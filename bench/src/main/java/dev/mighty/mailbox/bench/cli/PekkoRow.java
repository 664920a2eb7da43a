package dev.mighty.mailbox.bench.cli;

import java.util.function.Function;

import dev.mighty.mailbox.bench.PekkoInbox;

/**
 * A row over Apache Pekko ({@link PekkoInbox}): the producer thread {@code tell}s or {@code offer}s; the actor
 * (or the stream) checks every message on Pekko's default dispatcher, and the consumer thread waits, spinning
 * then yielding ({@link Workload#idle}), until the actor has received the iteration's last message.
 *
 * <p>The iteration's time is measured here ({@link #elapsedNanos}): from the start of {@link #produce} to the
 * actor's receipt of the last message, the same span as the other rows' start signal to last receive. The
 * consumer thread's own clock would be wrong here: when Pekko's woken thread preempts it before it has seen the
 * start signal, the actor can receive the whole batch before that clock starts.
 *
 * <p>Pekko's threads are a third runnable thread on the two cores while a batch is in flight (the consumer
 * thread yields while it waits): that is how a Pekko user's actor runs, and part of what the row measures.
 */
final class PekkoRow implements Workload {
    static final String ACTOR = "pekko_actor_mailbox_throughput";
    static final String SOURCE_QUEUE = "pekko_source_queue_mailbox_throughput";

    private final PekkoInbox inbox;
    private final Integer[] payload;
    private final int messages;
    /** Consumer thread only: the batches received so far. */
    private int consumed;
    /** Producer thread only: when the current iteration's {@link #produce} started. */
    private long produceStart;

    private PekkoRow(PekkoInbox inbox, Workloads.Setup s) {
        this.inbox = inbox;
        this.payload = s.payload();
        this.messages = s.messages();
    }

    /** @return the factory of {@value #ACTOR}: a typed actor, default dispatcher, default (unbounded) mailbox */
    static Function<Workloads.Setup, Workload> actor() {
        return s -> new PekkoRow(PekkoInbox.actor("pekko-actor-mailbox", s.messages()), s);
    }

    /** @return the factory of {@value #SOURCE_QUEUE}: {@code Source.queue(capacity)} into {@code Sink.foreach} */
    static Function<Workloads.Setup, Workload> sourceQueue() {
        return s -> new PekkoRow(PekkoInbox.sourceQueue("pekko-source-queue", s.capacity(), s.messages()), s);
    }

    @Override
    public void produce(int n) throws InterruptedException {
        checkSize(n);
        produceStart = System.nanoTime();
        inbox.send(payload, n, Workload::idle);
    }

    /** Producer thread, after the consumer thread saw the batch complete (which published its end time). */
    @Override
    public long elapsedNanos(long consumerNanos) {
        return inbox.lastBatchEndNanos() - produceStart;
    }

    @Override
    public void consume(int n) throws InterruptedException {
        checkSize(n);
        final int target = ++consumed;
        final PekkoInbox inbox = this.inbox;
        for (int spins = 0; inbox.completedBatches() < target; ) {
            spins = Workload.idle(spins);
        }
        inbox.checkFailure();
    }

    private void checkSize(int n) {
        if (n != messages) {
            throw new IllegalArgumentException("n: " + n + " (expected: " + messages + ", the batch the check expects)");
        }
    }

    @Override
    public void close() {
        inbox.close();
    }
}

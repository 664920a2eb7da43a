package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.IllegalGenerationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The exactly-once face, read-process-write: batches of records from the receiver's mailbox, each processed and
 * committed in one producer transaction with its consumed offsets. One transaction at a time, on a thread of its own
 * (the <em>transaction thread</em>):
 * <ol>
 *   <li>a batch: up to {@code maxRecords} records, or what came within {@code maxWait} of the first (records of a
 *       revoked assignment dropped: the partition's next owner gets them);</li>
 *   <li>{@code beginTransaction}; each record's outputs ({@code process}, in order) pulled onto the transaction
 *       thread and handed to the transactional {@link KafkaMailboxSender}'s producer ({@code send} with a callback
 *       that keeps the first failure; the producer's {@code buffer.memory} bounds what is in flight, and its
 *       {@code send} blocks when that is full);</li>
 *   <li>the barrier, on the poll thread (a consumer task): if a record's assignment ended, abort; else acknowledge
 *       the batch, read each partition's commit offset from its ledger (the contiguous prefix: the batch's end, or
 *       the consumer's position past transaction markers), {@code sendOffsetsToTransaction} with
 *       {@code consumer.groupMetadata()}, {@code commitTransaction} (after a {@code flush}: a failed send fails the
 *       transaction with its own error). On the poll thread, so that no revocation can
 *       come between the check and the offsets reaching the coordinator (Kafka fences offsets sent with an old
 *       generation; those sent before the revocation hold the next owner's fetch until the transaction ends);</li>
 *   <li>the next batch.</li>
 * </ol>
 * A failure aborts the transaction and rewinds: each partition of the batch whose assignment is still current is
 * sought back to the batch's first record and starts a new epoch (so the records after it, still in the mailbox or
 * polled, are dropped as revoked and fetched again). Then: a fenced producer ({@code ProducerFencedException},
 * {@code InvalidProducerEpochException}, an unsupported version, an authorization error) ends the stream without an
 * abort (the producer can do nothing more); the group having moved on (the partition revoked, the generation gone) or
 * a retriable error goes on with the next batch (the records are delivered again); anything else (the processing
 * failed, a send failed) ends the stream after the abort. The receiver commits nothing itself meanwhile (its
 * {@link Committer} is transactional), so the only offsets committed are those of committed transactions.
 * <p>Backpressure: the batch is taken from the mailbox only when the downstream asked for a transaction and the
 * previous one ended; the mailbox is the only buffer between poll and transaction (plus one batch).
 * <p>Threads: {@link #transact} on the transaction thread; the barrier and the rewind on the poll thread (their
 * stages are joined by the transaction thread, which publishes each step to the next); {@link #awaitIdle} on the poll
 * thread; {@link #open} written by the transaction thread, read by the poll thread (volatile).
 *
 * @param <K> the consumed key type
 * @param <V> the consumed value type
 * @param <OK> the produced key type
 * @param <OV> the produced value type
 */
final class ExactlyOnce<K, V, OK, OV> implements TransactionBarrier {
    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());
    private static final long IDLE_STEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How many outputs the transaction thread asks {@code process} for at a time. */
    private static final int OUTPUT_PREFETCH = 256;

    private final KafkaMailboxReceiver<K, V> receiver;
    private final ReceiverLoop<K, V> loop;
    private final KafkaProducer<OK, OV> producer;
    private final Function<? super ConsumerRecord<K, V>, ? extends Publisher<? extends ProducerRecord<OK, OV>>>
            process;
    /** A transaction is open: begun, and not yet committed or aborted. */
    private volatile boolean open;

    private ExactlyOnce(KafkaMailboxReceiver<K, V> receiver, KafkaMailboxSender<OK, OV> sender,
            Function<? super ConsumerRecord<K, V>, ? extends Publisher<? extends ProducerRecord<OK, OV>>> process) {
        this.receiver = receiver;
        this.loop = receiver.loop();
        this.producer = sender.producer();
        this.process = process;
    }

    static <K, V, OK, OV> Flux<CommittedTransaction<K, V>> receive(KafkaMailboxReceiver<K, V> receiver,
            KafkaMailboxSender<OK, OV> sender,
            Function<? super ConsumerRecord<K, V>, ? extends Publisher<? extends ProducerRecord<OK, OV>>> process) {
        return Flux.defer(() -> {
            if (receiver.loop().settings.onOverdue != null) {
                // it would acknowledge a record on the application's behalf, and a barrier would commit past it
                return Flux.error(new IllegalStateException("receiveExactlyOnce on a receiver whose"
                        + " maxUnacknowledgedAge has a handler: offsets move only through transactions"));
            }
            final IllegalStateException refused = receiver.claimReceive();
            if (refused != null) {
                return Flux.error(refused);
            }
            final ExactlyOnce<K, V, OK, OV> eos = new ExactlyOnce<>(receiver, sender, process);
            eos.loop.committer.transactional(eos); // before the start: the poll thread's start publishes it
            final ExecutorService thread = Executors.newSingleThreadExecutor(task -> {
                final Thread t = new Thread(task, receiver.threadName("transactions"));
                t.setDaemon(true);
                return t;
            });
            final Scheduler transactions = Schedulers.fromExecutorService(thread);
            final ReceiverSettings<K, V> settings = eos.loop.settings;
            return ReactorReceive.claimed(receiver, Schedulers.newSingle(receiver.threadName("receive"), true), true)
                    .bufferTimeout(settings.transactionRecords, settings.transactionWait, true)
                    // one batch ahead at most; the transaction runs when publishOn delivers the batch, which it does
                    // only on the downstream's demand (a concatMap would subscribe the next one ahead of it)
                    .publishOn(transactions, 1)
                    .<CommittedTransaction<K, V>>handle((batch, sink) -> {
                        try {
                            final CommittedTransaction<K, V> committed = eos.transact(batch);
                            if (committed != null) {
                                sink.next(committed);
                            }
                        } catch (Exception e) {
                            sink.error(e);
                        }
                    })
                    .doFinally(signal -> thread.shutdown());
        });
    }

    /**
     * One transaction, on the transaction thread.
     *
     * @return the committed transaction, or null if it was aborted and its records are delivered again
     */
    CommittedTransaction<K, V> transact(List<ReceivedRecord<K, V>> batch) throws Exception {
        final List<ReceivedRecord<K, V>> live = new ArrayList<>(batch.size());
        for (ReceivedRecord<K, V> r : batch) {
            if (!r.isRevoked()) {
                live.add(r);
            }
        }
        if (live.isEmpty() || !loop.lifecycle.isRunning()) {
            return null; // nothing to do, or closing: the records go to the next owner
        }
        open = true;
        try {
            producer.beginTransaction(); // inside: a producer fenced here clears open as any failure does
            final List<ConsumerRecord<K, V>> records = new ArrayList<>(live.size());
            for (ReceivedRecord<K, V> r : live) {
                records.add(r.record());
            }
            final Flux<ProducerRecord<OK, OV>> outputs = Flux.fromIterable(records)
                    .concatMap(record -> Flux.<ProducerRecord<OK, OV>>from(process.apply(record))
                            .onErrorMap(ProcessingFailure::new));
            // the outputs are sent from this thread as they come (the producer's send may block when its buffer is
            // full: this thread's, not a Reactor worker's); no wait per send: the barrier's flush and commit cover
            // them all, and the first failure a callback saw fails the transaction with its own error
            final SendFailure failure = new SendFailure();
            int sent = 0;
            for (ProducerRecord<OK, OV> output : outputs.toIterable(OUTPUT_PREFETCH)) {
                failure.rethrow();
                producer.send(output, failure);
                sent++;
            }
            final Map<TopicPartition, OffsetAndMetadata> offsets =
                    join(loop.tasks.submit(c -> barrier(live, failure)));
            open = false;
            return new CommittedTransaction<>(records, sent, offsets);
        } catch (Throwable e) {
            final Throwable cause = unwrap(e);
            if (isFenced(cause)) {
                open = false;
                LOG.log(Level.ERROR, "receiver {0}: the transactional producer was fenced ({1}); nothing of its open"
                        + " transaction is committed", loop.settings.label, cause.toString());
                throw asException(cause);
            }
            abortAndRewind(live, cause);
            if (goesOn(cause) || !loop.lifecycle.isRunning()) {
                return null; // delivered again: to this receiver after the rewind, or to the next owner
            }
            throw asException(cause instanceof ProcessingFailure ? cause.getCause() : cause);
        }
    }

    /** Poll thread: the transaction's barrier (see the class comment). */
    private Map<TopicPartition, OffsetAndMetadata> barrier(List<ReceivedRecord<K, V>> live, SendFailure failure) {
        producer.flush(); // every send of the transaction completed: a failure among them is known now
        failure.rethrow();
        for (ReceivedRecord<K, V> r : live) {
            if (r.isRevoked()) {
                throw new RevokedInTransaction(r);
            }
        }
        final Map<TopicPartition, PartitionAcks> ledgers = new LinkedHashMap<>();
        for (ReceivedRecord<K, V> r : live) {
            r.acknowledge();
            ledgers.putIfAbsent(r.ledger().partition, r.ledger());
        }
        final Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
        for (PartitionAcks ledger : ledgers.values()) {
            offsets.put(ledger.partition, new OffsetAndMetadata(ledger.commitOffset(), ledger.commitEpoch(), ""));
        }
        producer.sendOffsetsToTransaction(offsets, loop.consumer.groupMetadata());
        producer.commitTransaction();
        for (PartitionAcks ledger : ledgers.values()) {
            ledger.committed(offsets.get(ledger.partition).offset());
        }
        return offsets;
    }

    private void abortAndRewind(List<ReceivedRecord<K, V>> live, Throwable cause) {
        LOG.log(goesOn(cause) ? Level.INFO : Level.WARNING, "receiver {0}: a transaction of {1} records aborted ({2});"
                + " its records are delivered again", loop.settings.label, live.size(), cause.toString());
        try {
            producer.abortTransaction();
        } catch (RuntimeException e) {
            cause.addSuppressed(e);
        } finally {
            open = false;
        }
        try {
            join(loop.tasks.submit(c -> {
                rewind(live);
                return null;
            }));
        } catch (Exception e) {
            cause.addSuppressed(e); // the receiver closed: nothing of the batch was committed, its next owner gets it
        }
    }

    /** Poll thread: seeks each still-current partition of the batch back to its first record, in a new epoch. */
    private void rewind(List<ReceivedRecord<K, V>> live) {
        final Map<TopicPartition, ReceivedRecord<K, V>> first = new LinkedHashMap<>();
        for (ReceivedRecord<K, V> r : live) {
            first.putIfAbsent(r.ledger().partition, r);
        }
        for (ReceivedRecord<K, V> r : first.values()) {
            final TopicPartition partition = r.ledger().partition;
            if (loop.ledgers.get(partition) == r.ledger() && !r.isRevoked()) {
                loop.consumer.seek(partition, r.offset());
                loop.ledgers.newLedger(partition); // what is left of the old epoch is dropped, and fetched again
            }
        }
    }

    @Override
    public void awaitIdle(long deadline) {
        while (open && System.nanoTime() - deadline < 0) {
            loop.tasks.runAll(); // the open transaction's barrier, if it is waiting for this thread
            if (open) {
                LockSupport.parkNanos(this, IDLE_STEP_NANOS);
            }
        }
        loop.tasks.runAll();
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    private static <T> T join(java.util.concurrent.CompletionStage<T> stage) throws Exception {
        try {
            return stage.toCompletableFuture().get();
        } catch (ExecutionException e) {
            throw asException(e.getCause());
        }
    }

    private static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static Exception asException(Throwable t) {
        if (t instanceof Exception) {
            return (Exception) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new IllegalStateException(t);
    }

    /** @return whether the producer can do nothing more: end the stream, no abort */
    private static boolean isFenced(Throwable t) {
        return t instanceof ProducerFencedException || t instanceof InvalidProducerEpochException
                || t instanceof UnsupportedVersionException || t instanceof AuthorizationException
                || t instanceof FencedInstanceIdException;
    }

    /** @return whether, after the abort, the stream goes on: the group moved on, or the error was retriable */
    private static boolean goesOn(Throwable t) {
        return t instanceof RevokedInTransaction || t instanceof CommitFailedException
                || t instanceof RebalanceInProgressException || t instanceof IllegalGenerationException
                || t instanceof UnknownMemberIdException || t instanceof RetriableException;
    }

    /** The first failure a send's callback reported (any thread: the producer's I/O thread). */
    private static final class SendFailure extends java.util.concurrent.atomic.AtomicReference<Exception>
            implements Callback {
        private static final long serialVersionUID = 1L;

        @Override
        public void onCompletion(RecordMetadata metadata, Exception exception) {
            if (exception != null) {
                compareAndSet(null, exception);
            }
        }

        void rethrow() {
            final Exception e = get();
            if (e instanceof RuntimeException) {
                throw (RuntimeException) e;
            } else if (e != null) {
                throw new IllegalStateException(e);
            }
        }
    }

    /** The processing of a record failed: the user's error, carried as the cause. */
    private static final class ProcessingFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ProcessingFailure(Throwable cause) {
            super(cause);
        }
    }

    /** A record of the batch lost its assignment before the barrier: abort, its partition's next owner gets it. */
    private static final class RevokedInTransaction extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RevokedInTransaction(ReceivedRecord<?, ?> r) {
            super("the assignment of " + r.topic() + "-" + r.partition() + " ended before the transaction committed");
        }
    }

    @Override
    public String toString() {
        return "ExactlyOnce{" + receiver + ", open=" + open + "}";
    }
}

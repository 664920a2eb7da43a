package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;

/**
 * A Kafka consumer group member that delivers its records into a bounded {@link Mailbox}, so that any face of
 * the mailbox ({@code recvMany}, {@code MailboxPublisher}, {@code MailboxFlux}) consumes them with the mailbox
 * as the backpressure boundary; at-least-once, with per-record acknowledgements. With reactor-core on the class
 * path, {@link #receive()} is the one-call face:
 * <pre>{@code
 * Disposable d = receiver.receive()                       // starts on subscribe; onNext off the poll thread
 *         .flatMap(r -> process(r.value()).doOnSuccess(x -> r.acknowledge()), 64)
 *         .subscribe();
 * d.dispose();                                            // commits what is acknowledged, leaves the group
 * }</pre>
 * The low-level path:
 * <pre>{@code
 * KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(consumerConfig)
 *         .topics(List.of("orders"))
 *         .build();
 * MailboxFlux.from(receiver.mailbox())
 *         .publishOn(Schedulers.boundedElastic())        // subscriber code off the poll thread
 *         .subscribe(r -> { process(r.record()); r.acknowledge(); });
 * receiver.start();
 * ...
 * receiver.close(Duration.ofSeconds(10));                 // the Flux completes once the mailbox is drained
 * }</pre>
 *
 * <h2>Backpressure and the memory bound</h2>
 * One thread (the <em>poll thread</em>, started by {@link #start()}) owns the {@code KafkaConsumer}. It polls
 * only while it holds mailbox reservations for a whole poll ({@code max.poll.records} slots, reserved before
 * polling), so a poll's records always fit and it never waits on a full mailbox. Without that room it
 * {@linkplain #paused() pauses} every assigned partition and keeps polling (paused) every {@code pollTimeout} for
 * group liveness, so {@code max.poll.interval.ms} is never exceeded because the consumer is slow; it is woken when a
 * poll's worth of room is free, not per freed slot. Unless the configuration sets {@code max.poll.records}, the
 * receiver sets it to {@code min(500, capacity)}; the records it holds are then at most {@code capacity}, plus 9
 * bytes per record delivered and not yet committed-past. Per partition, {@link Builder#maxUnacknowledged} bounds
 * the open span (the records delivered from the oldest unacknowledged one on), so one record dropped without an
 * acknowledgement stops its partition, visibly ({@link #oldestUnacknowledgedAge()}), as reactor-kafka's
 * {@code maxDeferredCommits} does.
 *
 * <h2>Acknowledgements and commits (at-least-once)</h2>
 * Every record comes as a {@link ReceivedRecord}; {@link ReceivedRecord#acknowledge()} may be called from any
 * thread, in any order. The offset committed for a partition is that of its oldest delivered record not yet
 * acknowledged, or, when all are acknowledged, the consumer's position after the records it returned: nothing
 * unacknowledged is ever committed. The poll thread commits every {@code commitInterval} ({@code commitAsync}), on
 * revocation (after waiting up to {@code revocationTimeout} for the revoked partitions' acknowledgements), on close
 * (within its deadline) and on a fatal error ({@code commitSync}, bounded). A commit refused because the group
 * rebalanced is not fatal: the records go to the partition's next owner.
 *
 * <h2>Rebalances</h2>
 * Every assignment of a partition starts a new epoch ({@link ReceivedRecord#assignmentEpoch()}). Records of a
 * revoked epoch still in the mailbox or in the application's hands become {@linkplain ReceivedRecord#isRevoked()
 * revoked}: acknowledging them changes nothing, so no stale acknowledgement moves an offset of the partition's next
 * owner ({@link #receive()} skips them). A lost partition is revoked without a commit. A seek backwards starts a
 * new epoch as well.
 *
 * <h2>Errors, logging and monitoring</h2>
 * A fatal poll or commit error ends the stream: the receiver commits what is acknowledged, closes the consumer and
 * closes the mailbox exceptionally with the error (the consumer face sees it after draining). A record that cannot
 * be deserialized is fatal in the same way, unless {@link Builder#onDeserializationError} gave a handler. Logging is
 * through {@code System.Logger} ({@code dev.mighty.mailbox.kafka.KafkaMailboxReceiver}; a line names the topics and
 * the group id, never any other configuration value); a partition whose oldest unacknowledged record has been open
 * for 30 s gets a WARNING and the JFR event {@code dev.mighty.mailbox.kafka.UnacknowledgedRecord}. {@link #stats()}
 * is a snapshot of the receiver's figures, which {@code KafkaReceiverMetrics} binds to Micrometer.
 *
 * <h2>Threads, progress, visibility</h2>
 * Every public method may be called from any thread; everything that touches the {@code KafkaConsumer} runs on
 * the poll thread, and so do commit callbacks and the completion of {@link ReceivedRecord#commitAsync()}. Only the
 * receiver sends into the mailbox. With the trampolined {@code MailboxPublisher} or {@code MailboxFlux} and no
 * {@code publishOn}, subscriber code runs on the poll thread and delays polling: give slow work its own thread.
 * {@link ReceivedRecord#acknowledge()} is wait-free; {@link #close(Duration)} blocks, bounded by its timeout;
 * {@link #closeAsync(Duration)} and {@link #receive()}'s cancel do not block. What the poll thread did before
 * sending a record happens-before the consumer's receipt of it; what a thread did before {@code acknowledge()}
 * happens-before the commit of an offset past that record; closing happens-before the end of stream.
 * <p>The full contract (memory bound, commit points, rebalances, close, knobs) is in {@code docs/kafka.md}; the
 * parts of the implementation: {@code ReceiverLoop} (the poll thread), {@code Admission} (room and pause),
 * {@code Ledgers} and {@code PartitionAcks} (acknowledgements and bounds), {@code Committer}, {@code RebalanceHandler},
 * {@code ReceiverLifecycle} (state and close).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class KafkaMailboxReceiver<K, V> implements AutoCloseable {
    /** The default of {@link Builder#capacity}. */
    public static final int DEFAULT_CAPACITY = 1024;
    /** The default of {@link Builder#commitInterval}. */
    public static final Duration DEFAULT_COMMIT_INTERVAL = Duration.ofSeconds(1);
    /** The default of {@link Builder#pollTimeout}. */
    public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(100);
    /** The default of {@link Builder#revocationTimeout}. */
    public static final Duration DEFAULT_REVOCATION_TIMEOUT = Duration.ofSeconds(1);
    /** The timeout of {@link #close()}. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);
    /** The default of {@link Builder#maxUnacknowledged}. */
    public static final int DEFAULT_MAX_UNACKNOWLEDGED = 4096;
    /** The default of {@link Builder#transactionBatch}'s {@code maxWait}. */
    public static final Duration DEFAULT_TRANSACTION_WAIT = Duration.ofMillis(100);

    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());

    private final ReceiverLoop<K, V> loop;
    private final AtomicBoolean receiveClaimed = new AtomicBoolean();

    private KafkaMailboxReceiver(ReceiverSettings<K, V> settings) {
        this.loop = new ReceiverLoop<>(settings);
    }

    /**
     * Creates a builder of receivers.
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param consumerConfig the {@code KafkaConsumer} configuration: {@code bootstrap.servers}, {@code group.id}
     *        and the key and value deserializers (classes or class names). {@code enable.auto.commit} is set to
     *        {@code false} by the receiver.
     * @return a builder
     * @throws NullPointerException if {@code consumerConfig} is null
     */
    public static <K, V> Builder<K, V> builder(Map<String, Object> consumerConfig) {
        return new Builder<>(consumerConfig);
    }

    /**
     * The low-level path: the mailbox the records arrive in; consume it with any face, one consumer at a time,
     * and {@link #start()} the receiver yourself.
     * <p><b>Note:</b> only the receiver may send into this mailbox. {@code Mailbox} is sealed (its hooks are the
     * library's), so no send-refusing view of it can be handed out: a record sent into it by the application is
     * delivered like the others but is in no ledger (acknowledging it does nothing).
     *
     * @return the mailbox the records arrive in
     */
    public Mailbox<ReceivedRecord<K, V>> mailbox() {
        return loop.mailbox;
    }

    /**
     * The records as a {@code Flux} (reactor-core needed on the class path for this method only; the rest of the
     * receiver neither loads nor needs it). Subscribing starts the receiver; records are delivered on a
     * single-threaded scheduler of this stream's own ({@code Schedulers.newSingle}, a daemon thread named
     * {@code kafka-mailbox-receive-<topics>}, disposed when the stream ends), never on the poll thread, through
     * the fused {@code MailboxFlux} and {@code publishOn}: the worker takes records from the mailbox itself, so a
     * slow downstream pauses the partitions and nothing is buffered outside the mailbox.
     * A record whose partition was revoked while it waited in the mailbox ({@link ReceivedRecord#isRevoked()}) is
     * not delivered: the partition's next owner gets it.
     * <p>A cancel, an error or a completion downstream closes the receiver without blocking the signalling
     * thread ({@link #closeAsync(Duration)} with the builder's {@code revocationTimeout} as the wait for
     * acknowledgements still in flight): it commits what is acknowledged and leaves the group, so the partitions
     * move to the other members, which get every record not acknowledged (including those still in the mailbox).
     * The stream completes when the receiver closes (once the mailbox is drained) and errors with a fatal poll or
     * commit error.
     * <p>One {@code receive()} subscription per receiver, and not next to {@link #start()}: a second subscriber,
     * or a subscriber after {@code start()}, gets {@code onError(IllegalStateException)}.
     *
     * @return a cold {@code Flux} of the records; acknowledge each ({@link ReceivedRecord#acknowledge()}) or
     *         commit it ({@link ReceivedRecord#commit()})
     */
    public Flux<ReceivedRecord<K, V>> receive() {
        return ReactorReceive.receive(this, null, true);
    }

    /**
     * As {@link #receive()}, delivering on {@code scheduler} instead (not disposed by the stream).
     *
     * @param scheduler where the downstream's {@code onNext} runs; not {@code Schedulers.immediate()} if the
     *        downstream is slow (it would run on the poll thread)
     * @return a cold {@code Flux} of the records
     */
    public Flux<ReceivedRecord<K, V>> receive(Scheduler scheduler) {
        return ReactorReceive.receive(this, Objects.requireNonNull(scheduler, "scheduler"), false);
    }

    /**
     * As {@link #receive()}, acknowledging each record once the downstream's {@code onNext} for it has returned
     * (reactor-kafka's {@code receiveAutoAck}, one record at a time), and never a record whose processing failed or
     * was cancelled mid-flight: an operator whose function throws cancels the stream from inside that
     * {@code onNext}, so that record stays unacknowledged and its partition's next owner gets it again
     * (at-least-once). Work the downstream continues asynchronously after {@code onNext} returns (a
     * {@code flatMap}'s inner) is not covered: use {@link #receive()} and acknowledge yourself for that.
     *
     * @return a cold {@code Flux} of the records
     */
    public Flux<ConsumerRecord<K, V>> receiveAutoAck() {
        return ReactorReceive.autoAck(receive());
    }

    /**
     * As {@link #receive()}, committing each record before it is handed on (reactor-kafka's
     * {@code receiveAtmostOnce}): a crash or a rebalance loses at most the records handed on and not yet processed,
     * and none is processed twice. A record whose partition is revoked before its commit completes is not handed
     * on (the partition's next owner gets it). One commit round trip per record, in order: each waits for the poll
     * thread's next turn (up to {@link Builder#pollTimeout} on an idle topic) and for the broker's answer, so this
     * is the slow face; batch work with {@link #receive()} and acknowledgements where throughput matters.
     *
     * @return a cold {@code Flux} of the records, each committed before its {@code onNext}
     */
    public Flux<ConsumerRecord<K, V>> receiveAtmostOnce() {
        return ReactorReceive.atMostOnce(receive());
    }

    /**
     * Exactly-once read-process-write (reactor-kafka's {@code receiveExactlyOnce} with its transaction manager, in one
     * call): records are taken from the mailbox in batches ({@link Builder#transactionBatch}), and each batch is one
     * producer transaction of {@code sender}: {@code process} maps each record to the records to produce (in order),
     * they are sent, and the batch's consumed offsets go into the same transaction
     * ({@code sendOffsetsToTransaction} with the consumer's group metadata, on the poll thread) before it commits.
     * A {@code read_committed} reader of the output and the group's committed offsets then see each input record's
     * outputs exactly once, across crashes, rebalances and restarts. Subscribing starts the receiver; one
     * transaction at a time, on a thread of this stream's own; the next batch is taken only when the downstream asks
     * for a transaction and the previous one ended, so the mailbox stays the only buffer.
     * <p>Failures: a transaction that fails is aborted and its partitions rewound (sought back to the batch's first
     * records, whose later records are dropped and fetched again). When the group moved on (a partition revoked
     * before the commit, the generation gone) or the error was retriable, the stream goes on and the records are
     * delivered again (to this receiver or the partition's next owner). A fenced producer
     * ({@code ProducerFencedException}, {@code InvalidProducerEpochException}: another instance with the same
     * {@code transactional.id} took over) ends the stream with that error and commits nothing more. Any other failure
     * (the processing threw or signalled an error, a send failed) ends the stream with it after the abort. On a
     * revocation the poll thread lets the open transaction commit (up to {@code revocationTimeout}) before the
     * partitions go; the receiver itself commits nothing (no periodic, revocation or final commits), and
     * {@link ReceivedRecord#commit()} is refused.
     * <p>Use {@code isolation.level=read_committed} on the receiver when its input is itself written
     * transactionally, and a {@code transactional.id} per receiver instance that survives its restarts (so a
     * restarted instance fences its predecessor's zombie). A cancel, an error or a completion downstream closes the
     * receiver as {@link #receive()} does: the close waits for the open transaction within its acknowledgement wait
     * (half of {@code revocationTimeout}), and a transaction that has not committed by then is aborted.
     *
     * @param <OK> the produced key type
     * @param <OV> the produced value type
     * @param sender a transactional sender (built with a {@code transactional.id}), used by this stream only
     * @param process maps a record to the records to produce for it, in order (empty for none); called on the
     *        transaction thread or on the thread that completed the previous record's outputs (the sender's result
     *        thread, an asynchronous output's), one record at a time
     * @return a cold {@code Flux} of the committed transactions
     * @throws IllegalArgumentException if {@code sender} is not transactional
     */
    public <OK, OV> Flux<CommittedTransaction<K, V>> receiveExactlyOnce(KafkaMailboxSender<OK, OV> sender,
            Function<? super ConsumerRecord<K, V>, ? extends Publisher<? extends ProducerRecord<OK, OV>>> process) {
        Objects.requireNonNull(process, "process");
        if (!Objects.requireNonNull(sender, "sender").isTransactional()) {
            throw new IllegalArgumentException("sender: not transactional (expected: a KafkaMailboxSender built with"
                    + " transactional.id)");
        }
        return ExactlyOnce.receive(this, sender, process);
    }

    /** @return null if this is the first receive() and the receiver is new, else the refusal */
    IllegalStateException claimReceive() {
        if (!receiveClaimed.compareAndSet(false, true)) {
            return new IllegalStateException("receive() subscribed twice: one receive() subscription per receiver");
        }
        if (loop.lifecycle.state() != ReceiverState.NEW) {
            return new IllegalStateException("receive() on a receiver already started or closed: state="
                    + loop.lifecycle.state());
        }
        return null;
    }

    Duration receiveCloseTimeout() {
        return loop.settings.revocationTimeout;
    }

    String threadName(String role) {
        return loop.settings.threadName(role);
    }

    /**
     * Starts the poll thread: it subscribes to the topics and begins to poll. Any thread, once.
     * <p>If the poll thread cannot be started (the thread factory's thread was started already, no native thread
     * left), what {@code Thread.start} threw is rethrown and the receiver is closed: its mailbox closed
     * exceptionally with that error, {@code closeAsync} complete.
     *
     * @throws IllegalStateException if started before, or closed
     */
    public void start() {
        loop.start();
    }

    /**
     * Runs {@code action} with the consumer on the poll thread, at its next turn (reactor-kafka's
     * {@code doOnConsumer}): metrics, positions, {@code seek}, {@code committed}, ...
     * <p><b>WARNING:</b> {@code action} runs on the poll thread and must not block for long; it must not close the
     * consumer, change its subscription or assignment, commit, or call {@code pause}/{@code resume} (the receiver
     * owns those). A {@code seek} backwards starts a new epoch of that partition (records delivered before it are
     * stale). Actions submitted before {@link #start()} run once it has started. Called on the poll thread itself
     * (from a listener, or a subscriber of {@code receive(Schedulers.immediate())}), {@code action} runs at once,
     * so a caller that blocks on the stage there does not wait for itself.
     *
     * @param <T> the result type
     * @param action what to run with the consumer
     * @return a stage completed on the poll thread with what {@code action} returned or threw, or failed with
     *         {@code IllegalStateException} if the receiver closes first
     */
    public <T extends @Nullable Object> CompletionStage<T> doOnConsumer(
            Function<? super org.apache.kafka.clients.consumer.Consumer<K, V>, ? extends T> action) {
        return loop.tasks.submit(Objects.requireNonNull(action, "action"));
    }

    /**
     * {@return whether the receiver has paused its partitions because the mailbox has no room for a poll (a
     *          snapshot: it flips as the consumer frees room)}
     */
    public boolean paused() {
        return loop.admission.paused();
    }

    /**
     * The alarm for a record dropped without an acknowledgement (a {@code filter}, an {@code onErrorContinue}, a
     * timeout): its partition's committed offset cannot pass it, so this age keeps growing. The receiver logs a
     * warning when it passes 30 s for a partition.
     *
     * @return how long the oldest unacknowledged record (over all partitions) has been the oldest of its
     *         partition (at most since it was delivered), or zero when every delivered record is acknowledged;
     *         updated by the poll thread at each turn
     */
    public Duration oldestUnacknowledgedAge() {
        return Duration.ofNanos(loop.ledgers.oldestUnacknowledgedNanos());
    }

    /**
     * {@return how many partitions are paused because their unacknowledged records reached
     *          {@link Builder#maxUnacknowledged} (a snapshot, updated by the poll thread at each turn)}
     */
    public int partitionsAtUnacknowledgedBound() {
        return loop.ledgers.partitionsAtBound();
    }

    /**
     * The receiver's figures for monitoring (partitions assigned and paused, records unacknowledged, the oldest
     * one's age, the consumer's lag, commits and their latency);
     * {@code dev.mighty.mailbox.kafka.micrometer.KafkaReceiverMetrics} turns them into meters. Any thread;
     * wait-free, allocates nothing.
     * <p>The poll thread refreshes the snapshot at a turn at least 100 ms after the last refresh (the lag at most once
     * a second), after each commit it completes, and when it finishes; before {@link #start()} every figure is 0 (the
     * lag -1). Refreshing costs the poll thread a scan of each partition's ledger from its oldest unacknowledged record
     * (one flag per record, bounded by {@link Builder#maxUnacknowledged} plus a poll) and, once a second, a read of
     * the consumer's own fetch metrics ({@code records-lag}); nothing is added to the acknowledgement path.
     *
     * @return the last snapshot: one cut of the poll thread's state at its refresh (see
     *         {@link KafkaReceiverStats} for which figures are racy)
     */
    public KafkaReceiverStats stats() {
        return loop.stats.get();
    }

    /** As {@link #close(Duration)} with {@link #DEFAULT_CLOSE_TIMEOUT}. */
    @Override
    public void close() {
        close(DEFAULT_CLOSE_TIMEOUT);
    }

    /**
     * Stops polling, waits for the delivered records to be acknowledged, commits what is acknowledged, closes the
     * consumer (leaving the group) and closes the mailbox: what is in it stays receivable and the stream completes
     * once it is drained (records not acknowledged by then are delivered again to the group after the restart or
     * rebalance; acknowledging them changes nothing).
     * <p>One deadline, {@code timeout} from now, bounds the whole close: the wait for acknowledgements (of the records
     * taken from the mailbox; those still in it are not waited for) ends early enough to leave the final
     * {@code commitSync} and the consumer's close part of it (half of the timeout, at most 5 s), and those two share
     * what remains (at least 500 ms each). A thread that acknowledged records of a partition still open is not waited
     * for: called from the thread that acknowledges, close does not wait for acknowledgements that cannot come while
     * it blocks.
     * <p>Returns when the receiver is closed, or at the deadline (plus the floor) if the poll thread has not finished
     * by then (it is running code that does not return, e.g. a subscriber on the poll thread): the close then
     * completes in the background ({@link #closeAsync} tells when). An interrupt ends the wait early (the flag is
     * kept) and the close completes in the background too. Idempotent (a second call waits for the first close,
     * bounded by its own timeout); harmless before {@link #start()}. Called on the poll thread (from subscriber
     * code run by a send), it does not wait: the poll thread stops when that code returns.
     *
     * @param timeout the bound of the whole close, {@code >= 0}
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public void close(Duration timeout) {
        checkTimeout(timeout);
        loop.stop(timeout, false);
        if (Thread.currentThread() == loop.pollThread) {
            return; // subscriber code running on the poll thread: it stops when this returns
        }
        final long waitNanos = ReceiverLifecycle.saturatedNanos(timeout) + 2 * ReceiverLoop.FINISH_FLOOR.toNanos();
        try {
            if (!loop.lifecycle.terminated.await(waitNanos, TimeUnit.NANOSECONDS)) {
                LOG.log(Level.WARNING, "receiver {0}: close({1}) returns before the poll thread finished; the close"
                        + " completes in the background", loop.settings.label, timeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the close completes in the background
        }
    }

    /**
     * Starts the close of {@link #close(Duration)} and returns at once.
     *
     * @param timeout the bound of the whole close, {@code >= 0}
     * @return a stage completed (normally, whatever the receiver's end was) once the consumer and the mailbox are
     *         closed; completed on the poll thread or the calling thread
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public CompletionStage<Void> closeAsync(Duration timeout) {
        checkTimeout(timeout);
        loop.stop(timeout, false);
        return loop.lifecycle.closed.copy();
    }

    private static void checkTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
    }

    /** @return the poll loop and its parts (tests: not API) */
    ReceiverLoop<K, V> loop() {
        return loop;
    }

    @Override
    public String toString() {
        return "KafkaMailboxReceiver{topics=" + loop.settings.topics + ", state=" + loop.lifecycle.state()
                + ", paused=" + paused() + ", mailbox=" + loop.mailbox + "}";
    }

    /**
     * Configures a {@link KafkaMailboxReceiver}. Not thread-safe; {@link #build()} creates the
     * {@code KafkaConsumer} (so a bad consumer configuration fails there) but starts nothing.
     *
     * @param <K> the key type
     * @param <V> the value type
     */
    public static final class Builder<K, V> {
        final Map<String, Object> config;
        List<String> topics;
        Pattern topicPattern;
        List<TopicPartition> assignment;
        BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> onAssigned;
        BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> onRevoked;
        BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> onLost;
        int capacity = DEFAULT_CAPACITY;
        Duration commitInterval = DEFAULT_COMMIT_INTERVAL;
        Duration pollTimeout = DEFAULT_POLL_TIMEOUT;
        Duration revocationTimeout = DEFAULT_REVOCATION_TIMEOUT;
        Consumer<? super RecordDeserializationException> deserializationErrorHandler;
        int maxUnacknowledged = DEFAULT_MAX_UNACKNOWLEDGED;
        Duration maxUnacknowledgedAge;
        /** 0: the poll threshold. */
        int transactionRecords;
        Duration transactionWait = DEFAULT_TRANSACTION_WAIT;
        BiConsumer<? super TopicPartition, ? super Long> onOverdue;
        Function<Map<String, Object>, ? extends org.apache.kafka.clients.consumer.Consumer<K, V>>
                consumerFactory = KafkaConsumer::new;
        ThreadFactory threadFactory;

        Builder(Map<String, Object> config) {
            this.config = ReceiverSettings.checkConsumerConfig(config);
        }

        /**
         * Subscribes to these topics.
         *
         * @param topics the topics to subscribe to (group management); required, not empty
         * @return this
         */
        public Builder<K, V> topics(List<String> topics) {
            this.topics = ReceiverSettings.checkTopics(topics);
            return this;
        }

        /**
         * Subscribes to every topic matching {@code pattern} (group management), instead of {@link #topics}.
         *
         * @param pattern the topics to subscribe to
         * @return this
         */
        public Builder<K, V> topicPattern(Pattern pattern) {
            this.topicPattern = Objects.requireNonNull(pattern, "pattern");
            return this;
        }

        /**
         * Reads exactly these partitions ({@code consumer.assign}, no group management, no rebalances) instead
         * of subscribing; the receiver still commits what is acknowledged to the group's offsets. The assignment
         * listener ({@link #onAssigned}) is called once, at the start, e.g. to seek.
         *
         * @param partitions the partitions to read, not empty
         * @return this
         */
        public Builder<K, V> assignment(Collection<TopicPartition> partitions) {
            this.assignment = ReceiverSettings.checkAssignment(partitions);
            return this;
        }

        /**
         * Called on the poll thread with the consumer after partitions are assigned and their ledgers made, before
         * their first records are fetched: the place to {@code seek} (reactor-kafka's {@code addAssignListener}).
         * Like every listener: runs inside {@code poll}, so keep it short; if it throws, the receiver fails with it.
         *
         * @param listener gets the consumer and the partitions assigned
         * @return this
         */
        public Builder<K, V> onAssigned(BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> listener) {
            this.onAssigned = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Called on the poll thread with the consumer after partitions are revoked (once their acknowledged offsets
         * are committed), and after partitions are lost (without a commit) unless {@link #onLost} is given, as
         * Kafka's own {@code ConsumerRebalanceListener.onPartitionsLost} defaults to its revocation callback.
         * Runs inside {@code poll} (it delays the group's rebalance); if it throws, the receiver fails with it.
         *
         * @param listener gets the consumer and the partitions revoked (or lost, without {@link #onLost})
         * @return this
         */
        public Builder<K, V> onRevoked(BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> listener) {
            this.onRevoked = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Called on the poll thread with the consumer after partitions are lost ({@code onPartitionsLost}: the
         * member was fenced or timed out, and another member may own them already). Nothing was committed for them,
         * and the listener must not commit for them either. Without it, lost partitions go to {@link #onRevoked}.
         *
         * @param listener gets the consumer and the partitions lost
         * @return this
         */
        public Builder<K, V> onLost(BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> listener) {
            this.onLost = Objects.requireNonNull(listener, "listener");
            return this;
        }

        /**
         * Sets the capacity of the receiver's mailbox.
         *
         * @param capacity of the mailbox between the poll thread and the consumer, {@code 1 .. 2^30}, rounded up
         *        to a power of two; default {@value KafkaMailboxReceiver#DEFAULT_CAPACITY}
         * @return this
         */
        public Builder<K, V> capacity(int capacity) {
            this.capacity = MailboxRing.checkCapacity(capacity);
            return this;
        }

        /**
         * Sets the commit interval.
         *
         * @param commitInterval how often the poll thread commits what is acknowledged, {@code > 0}; default 1 s
         * @return this
         */
        public Builder<K, V> commitInterval(Duration commitInterval) {
            this.commitInterval = ReceiverSettings.positive("commitInterval", commitInterval);
            return this;
        }

        /**
         * Sets the poll timeout.
         *
         * @param pollTimeout the timeout of a poll, and the longest gap between liveness polls while paused,
         *        {@code > 0}; default 100 ms
         * @return this
         */
        public Builder<K, V> pollTimeout(Duration pollTimeout) {
            this.pollTimeout = ReceiverSettings.positive("pollTimeout", pollTimeout);
            return this;
        }

        /**
         * Sets how long a rebalance waits for the acknowledgements of revoked partitions.
         *
         * @param revocationTimeout the longest wait, inside a rebalance, for the delivered records of revoked
         *        partitions to be acknowledged before their offsets are committed, {@code >= 0}; default 1 s. It
         *        delays the rebalance for the whole group: keep it well below {@code max.poll.interval.ms}.
         * @return this
         */
        public Builder<K, V> revocationTimeout(Duration revocationTimeout) {
            this.revocationTimeout = ReceiverSettings.nonNegative("revocationTimeout", revocationTimeout);
            return this;
        }

        /**
         * Skips records that cannot be deserialized instead of failing the stream: {@code handler} is called on
         * the poll thread with the exception (it has the partition, offset and raw bytes; e.g. send them to a
         * dead-letter topic), then the record counts as acknowledged and the receiver seeks past it. Without a
         * handler (the default) such a record is fatal: the stream ends with the
         * {@link RecordDeserializationException} after the records before it. {@code handler} runs on the poll
         * thread: it must not block for long; if it throws, the receiver fails with it.
         *
         * @param handler called once per skipped record
         * @return this
         */
        public Builder<K, V> onDeserializationError(Consumer<? super RecordDeserializationException> handler) {
            this.deserializationErrorHandler = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /**
         * Bounds the open span of one partition: the records delivered from its oldest unacknowledged one on,
         * acknowledged or not (reactor-kafka's {@code maxDeferredCommits}). The poll thread pauses a partition at
         * the bound and resumes it once acknowledgements move the oldest unacknowledged record on; at most
         * {@code perPartition + max.poll.records - 1} records are delivered past it, so one record never
         * acknowledged stops its partition there, visibly ({@link KafkaMailboxReceiver#oldestUnacknowledgedAge()}).
         * Lower: less work redone after a crash and less memory; higher: more parallelism within a partition.
         *
         * @param perPartition the bound, {@code >= 1}; default {@value KafkaMailboxReceiver#DEFAULT_MAX_UNACKNOWLEDGED}
         * @return this
         */
        public Builder<K, V> maxUnacknowledged(int perPartition) {
            this.maxUnacknowledged = ReceiverSettings.checkMaxUnacknowledged(perPartition);
            return this;
        }

        /**
         * Sizes the transactions of {@link KafkaMailboxReceiver#receiveExactlyOnce}: a transaction takes up to
         * {@code maxRecords} records from the mailbox, or what came within {@code maxWait} of its first record.
         * Larger transactions cost less per record (one {@code sendOffsetsToTransaction} and one commit each) but
         * redo more after an abort and hold the output back longer from {@code read_committed} readers.
         *
         * @param maxRecords the most records of one transaction, {@code >= 1}; default
         *        {@code min(max.poll.records, capacity)}
         * @param maxWait how long a transaction waits for more records after its first, {@code > 0}; default
         *        100 ms
         * @return this
         */
        public Builder<K, V> transactionBatch(int maxRecords, Duration maxWait) {
            if (maxRecords < 1) {
                throw new IllegalArgumentException("maxRecords: " + maxRecords + " (expected: >= 1)");
            }
            this.transactionWait = ReceiverSettings.positive("maxWait", maxWait);
            this.transactionRecords = maxRecords;
            return this;
        }

        /**
         * Escalates a record left unacknowledged: when a partition's oldest unacknowledged record has been the oldest
         * for {@code maxAge}, the receiver fails with {@link UnacknowledgedRecordException} (after committing what is
         * acknowledged, so the record goes to the partition's next owner). Without it (the default) such a record
         * only holds its partition at {@link #maxUnacknowledged} and is logged after 30 s.
         *
         * @param maxAge how long a record may stay its partition's oldest unacknowledged one, {@code > 0}; checked
         *        by the poll thread at each turn (at most {@code pollTimeout} late)
         * @return this
         */
        public Builder<K, V> maxUnacknowledgedAge(Duration maxAge) {
            this.maxUnacknowledgedAge = ReceiverSettings.positive("maxAge", maxAge);
            this.onOverdue = null;
            return this;
        }

        /**
         * As {@link #maxUnacknowledgedAge(Duration)}, but an overdue record is handed to {@code handler} (its partition
         * and offset, on the poll thread: log it, send it to a dead-letter topic) and then counts as acknowledged, so
         * its partition moves on instead of the receiver failing. The record is then at most once: choose
         * {@code maxAge} far above the longest processing time, or processing still under way is committed past.
         *
         * @param maxAge how long a record may stay its partition's oldest unacknowledged one, {@code > 0}
         * @param handler told of each overdue record, once; if it throws, the receiver fails with it
         * @return this
         */
        public Builder<K, V> maxUnacknowledgedAge(Duration maxAge,
                BiConsumer<? super TopicPartition, ? super Long> handler) {
            this.maxUnacknowledgedAge = ReceiverSettings.positive("maxAge", maxAge);
            this.onOverdue = Objects.requireNonNull(handler, "handler");
            return this;
        }

        /**
         * Creates the consumer (e.g. a {@code MockConsumer} for unit tests, or a wrapping consumer). Called once, by
         * {@link #build()}, with the configuration as the receiver completed it ({@code enable.auto.commit=false},
         * {@code max.poll.records}); the receiver closes what it returns.
         *
         * @param factory the consumer's factory; default {@code KafkaConsumer::new}
         * @return this
         */
        public Builder<K, V> consumerFactory(
                Function<Map<String, Object>, ? extends org.apache.kafka.clients.consumer.Consumer<K, V>> factory) {
            this.consumerFactory = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /**
         * Sets the factory of the poll thread.
         *
         * @param factory makes the poll thread (once, by {@link #build()}); default: a daemon thread named
         *        {@code kafka-mailbox-poll-<topics>}
         * @return this
         */
        public Builder<K, V> threadFactory(ThreadFactory factory) {
            this.threadFactory = Objects.requireNonNull(factory, "factory");
            return this;
        }

        /**
         * {@return a receiver, not started}
         * @throws IllegalStateException if none, or more than one, of topics, a topic pattern and an assignment
         *         were given
         * @throws org.apache.kafka.common.KafkaException if the consumer configuration is invalid
         */
        public KafkaMailboxReceiver<K, V> build() {
            return new KafkaMailboxReceiver<>(new ReceiverSettings<>(this));
        }
    }
}

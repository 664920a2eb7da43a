package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.ReceiverState.CLOSED;
import static dev.mighty.mailbox.kafka.ReceiverState.NEW;
import static dev.mighty.mailbox.kafka.ReceiverState.RUNNING;
import static dev.mighty.mailbox.kafka.ReceiverState.STOPPING;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxEvents;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import dev.mighty.mailbox.internal.Wakeable;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
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
 * polling), so a poll's records always fit and the thread never waits on a full mailbox. Without that room it
 * {@linkplain #paused() pauses} every assigned partition, waits for the consumer to free room, and keeps calling
 * {@code poll} (which returns nothing for paused partitions) every {@code pollTimeout} for group liveness; it
 * resumes the partitions once a poll's worth of room is back. The consumer's receives do not wake it per freed
 * slot: the wake-up, run by the receiving thread, reserves the freed room on the poll thread's behalf and unparks
 * it only once that covers a poll. So {@code max.poll.interval.ms} is never exceeded
 * because the consumer is slow.
 * <p>Unless the configuration sets {@code max.poll.records}, the receiver sets it to
 * {@code min(500, capacity)}. The records held by the receiver (in the mailbox, or polled and waiting for room)
 * are then at most {@code capacity}; if the configuration sets {@code max.poll.records} above the capacity, the
 * receiver polls only when the mailbox is empty and holds the overshoot until room comes, so at most
 * {@code max(capacity, max.poll.records)}. (The consumer's own fetch buffers are bounded by its
 * {@code fetch.max.bytes} and {@code max.partition.fetch.bytes}.) Beyond that, the receiver keeps 9 bytes per
 * record that was delivered and is not yet committed-past (its offset and acknowledgement flag, in chunks of
 * 256), and nothing of the record itself.
 * <p>Per partition, {@link Builder#maxUnacknowledged} bounds the open span: the records delivered from the oldest
 * unacknowledged one on, acknowledged or not (default {@value #DEFAULT_MAX_UNACKNOWLEDGED}). Before each poll the
 * poll thread reads it from the partition's ledger in O(1) and pauses a partition at the bound until
 * acknowledgements move its oldest unacknowledged record on (at most one poll's records over it). So one record
 * dropped without an acknowledgement stops its partition after at most that many more, as reactor-kafka's
 * {@code maxDeferredCommits} does, instead of letting the ledger and the uncommitted work grow without end.
 * {@link #oldestUnacknowledgedAge()} is the alarm for such a record.
 *
 * <h2>Acknowledgements and commits (at-least-once)</h2>
 * Every record comes as a {@link ReceivedRecord}; {@link ReceivedRecord#acknowledge()} may be called from any
 * thread, in any order. The offset committed for a partition is that of its oldest delivered record not yet
 * acknowledged, or, when all are acknowledged, the consumer's position after the records it returned
 * ({@code ConsumerRecords.nextOffsets()}: one past the last record, or past the transaction markers and aborted
 * records that follow it, so the group's lag reaches 0 on transactional input): nothing unacknowledged is ever
 * committed, and a restarted group resumes exactly there. A commit carries the leader epoch of the last record it
 * covers (or the position's). Commits are made by the poll thread:
 * <ol>
 *   <li>every {@code commitInterval} (and at the next turn after a {@link ReceivedRecord#commitAsync()}), for all
 *       assigned partitions whose offset moved, with {@code commitAsync}: a failure is logged and the next turn
 *       commits again; a non-retriable failure that lasts 30 s (e.g. an authorization error) is fatal;</li>
 *   <li>on revocation, for the revoked partitions, after waiting up to {@code revocationTimeout} for the
 *       delivered records of those partitions to be acknowledged, with {@code commitSync} (bounded, 10 s);</li>
 *   <li>on close, within the close's deadline (see {@link #close(Duration)}), with {@code commitSync};</li>
 *   <li>on a fatal error, what is acknowledged, without waiting, with {@code commitSync} (bounded, 5 s).</li>
 * </ol>
 * A retriable error of a synchronous commit is retried with backoff, up to 3 attempts in all within its bound,
 * then treated as fatal. A commit that fails because the group rebalanced ({@code CommitFailedException},
 * {@code RebalanceInProgressException}) is not fatal: the records are redelivered to the partition's next owner.
 *
 * <h2>Rebalances</h2>
 * Every assignment of a partition starts a new epoch ({@link ReceivedRecord#assignmentEpoch()}); the
 * consumer resumes from the committed offsets. When a partition is revoked, records of the old epoch still in the
 * mailbox or in the application's hands become {@linkplain ReceivedRecord#isRevoked() revoked}: they are still
 * delivered (the mailbox is not filtered), and acknowledging them changes nothing, so no stale record's
 * acknowledgement moves an offset of the partition's next owner ({@link #receive()} skips them). Polled records
 * not yet in the mailbox are not delivered (the next owner gets them). A lost partition ({@code onPartitionsLost})
 * is revoked without a commit. A partition whose position goes backwards within an assignment (a seek, an offset
 * reset) starts a new epoch as well. Records returned for a partition this receiver has no ledger for are
 * delivered under a new epoch if the partition is assigned, else logged (never dropped silently).
 *
 * <h2>Logging</h2>
 * Through {@code System.Logger} (no dependency; routed to {@code java.util.logging} unless the application
 * installs a {@code System.LoggerFinder}), logger {@code dev.mighty.mailbox.kafka.KafkaMailboxReceiver}:
 * assignments, revocations (INFO) and losses (WARNING), failed commits (INFO when a rebalance or retriable error,
 * WARNING otherwise), a partition whose oldest unacknowledged record has been open for 30 s (WARNING, once per
 * episode), a close that returns before the poll thread finished (WARNING), fatal errors (ERROR) and the close
 * (INFO). A line names the topics and the group id, never any other configuration value.
 * <p>The warning about a long-open oldest record has a JFR event beside it, committed by the poll thread at the same
 * moment (once per episode: again only after every record of the partition was acknowledged, or the partition was
 * assigned again): {@code dev.mighty.mailbox.kafka.UnacknowledgedRecord} (category {@code reactor-mailbox}, enabled
 * by default, no stack trace), with the group id, topic, partition, the offset of the oldest unacknowledged record,
 * its age and the partition's unacknowledged count. It follows the mailbox's events' switch
 * ({@code -Ddev.mighty.mailbox.jfr=off}; nothing without the {@code jdk.jfr} module), and costs an episode two static
 * volatile reads while the Flight Recorder was never initialized. See {@code docs/observability.md}.
 *
 * <h2>Monitoring</h2>
 * {@link #stats()} is a snapshot of the receiver's figures (partitions assigned and paused, records unacknowledged
 * and the oldest one's age, the consumer's lag, commits and their latency), made by the poll thread and readable from
 * any thread; {@code dev.mighty.mailbox.kafka.micrometer.KafkaReceiverMetrics} binds it to a Micrometer registry
 * (micrometer-core is optional: the receiver neither needs nor loads it). The JFR event of a long-open record: see
 * "Logging" above.
 *
 * <h2>Errors</h2>
 * A fatal poll or commit error ends the stream: the receiver commits what is acknowledged, closes the consumer
 * and closes the mailbox exceptionally with the error (the consumer face sees it after draining: {@code onError},
 * or {@code MailboxClosedException} from {@code recv}). A record that cannot be deserialized is fatal in the
 * same way, unless {@link Builder#onDeserializationError} gave a handler: the handler is called on the poll thread
 * with the {@link RecordDeserializationException} (partition, offset, raw key and value), the record counts as
 * acknowledged, and the receiver seeks past it.
 *
 * <h2>Threads</h2>
 * Every public method may be called from any thread; everything that touches the {@code KafkaConsumer} runs on
 * the poll thread, and so do commit callbacks and the completion of {@link ReceivedRecord#commitAsync()}. The mailbox
 * has one consumer at a time, as always; only the receiver sends into it (do not send into it yourself).
 * <p><b>Note:</b> with the default (trampolined) {@code MailboxPublisher} or {@code MailboxFlux} without
 * {@code publishOn}, a subscriber waiting on an empty mailbox is run by the sending thread, here the poll thread:
 * subscriber code then runs on the poll thread and delays polling. That is the fastest path for a quick
 * subscriber; give the subscriber its own thread ({@code publishOn}, an {@code Executor} for
 * {@code MailboxPublisher}, or {@code recvMany} on a thread of yours) for slow work.
 *
 * <h2>Progress</h2>
 * {@link ReceivedRecord#acknowledge()} is wait-free. {@link #close(Duration)} blocks, bounded by its timeout
 * (see there); {@link #closeAsync(Duration)} and {@link #receive()}'s cancel do not block. The poll
 * thread blocks only in {@code KafkaConsumer} calls, in a bounded wait for acknowledgements on revocation and
 * close, and parked while the mailbox has no room for a poll (woken by the consumer's receive that frees the
 * last slot of a poll's worth).
 *
 * <h2>Visibility</h2>
 * What the poll thread did before sending a record happens-before the consumer's receipt of it (the mailbox's
 * guarantee); what a thread did before {@code acknowledge()} happens-before the commit of an offset past that
 * record. Closing happens-before the end of stream of the mailbox.
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

    static final int COMMIT_ATTEMPTS = 3;
    /** How many times a room wake-up reserves again after losing its re-registration to a race, at most. */
    private static final int ROOM_ROUNDS = 4;
    /** The timeout of a liveness poll made while every partition is paused. */
    private static final Duration PAUSED_POLL = Duration.ofMillis(10);
    private static final long ACK_WAIT_STEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** Rounds of poll-then-commit when the final commit found the group rebalancing. */
    private static final int FINAL_COMMIT_ROUNDS = 3;
    /** One poll of those rounds, every partition paused. */
    private static final Duration REBALANCE_POLL = Duration.ofMillis(200);
    private static final long FINISH_FLOOR_MILLIS = 500;
    /** The least time a close gives its final commit and the consumer's close, whatever its timeout. */
    static final Duration FINISH_FLOOR = Duration.ofMillis(FINISH_FLOOR_MILLIS);
    /** The most of a close's timeout kept for its final commit and the consumer's close. */
    private static final long FINISH_RESERVE_NANOS = TimeUnit.SECONDS.toNanos(5);
    /** The budget of the final commit and the consumer's close after a fatal error. */
    private static final Duration FATAL_FINISH = Duration.ofSeconds(5);
    /**
     * How long a partition's oldest unacknowledged record stays open before a warning and an
     * {@link UnacknowledgedRecordEvent} (the default of {@link #longOpenNanos}).
     */
    static final long LONG_OPEN_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** The least time between two refreshes of the {@link #stats()} snapshot's ledger figures. */
    static final long STATS_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** The least time between two refreshes of the snapshot's lag (read from the consumer's fetch metrics). */
    static final long LAG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
    /**
     * How long periodic (asynchronous) commits may fail with a non-retriable error before that is fatal (the
     * default of {@link #commitFailureGraceNanos}).
     */
    static final long COMMIT_FAILURE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** The bound of a commit made inside a rebalance. */
    private static final Duration REVOCATION_COMMIT_TIMEOUT = Duration.ofSeconds(10);

    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());

    private final ReceiverSettings<K, V> settings;
    private final org.apache.kafka.clients.consumer.Consumer<K, V> consumer;
    private final List<String> topics;
    /** Set instead of a topic list for a pattern subscription. */
    private final Pattern topicPattern;
    /** Set instead of a subscription for a manual assignment (no group management). */
    private final List<TopicPartition> assignment;
    private final BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> onAssigned;
    private final BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> onRevoked;
    private final BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> onLost;
    /** Actions of {@link #doOnConsumer}: any thread adds, the poll thread runs them at its next turn. */
    private final ConcurrentLinkedQueue<ConsumerTask> consumerTasks = new ConcurrentLinkedQueue<>();
    /** For log lines and thread names: the topics and the group id (never anything else of the configuration). */
    private final String label;
    private final String groupId;
    /** The topics as {@link KafkaReceiverStats#topics()} gives them. */
    private final String topicsLabel;
    private final int maxUnacknowledged;
    private final AtomicBoolean receiveClaimed = new AtomicBoolean();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final Mailbox<ReceivedRecord<K, V>> mailbox;
    private final MailboxRing<ReceivedRecord<K, V>> ring;
    /** Reservations the poll thread wants before a normal poll: {@code min(max.poll.records, capacity)}. */
    private final int pollThreshold;
    private final long commitIntervalNanos;
    private final Duration pollTimeout;
    private final long revocationTimeoutNanos;
    private final Consumer<? super RecordDeserializationException> deserializationErrorHandler;
    private final AtomicReference<ReceiverState> state = new AtomicReference<>(ReceiverState.NEW);
    private final CountDownLatch terminated = new CountDownLatch(1);
    private final Thread pollThread;
    /**
     * Mailbox reservations a {@link RoomWait} took on the poll thread's behalf while it was parked (any thread
     * adds; the poll thread takes them into {@link #permits}; the close returns what is left).
     */
    private final AtomicInteger banked = new AtomicInteger();
    /**
     * How many reservations, beyond its own {@link #permits}, the parked poll thread waits for: a poll's worth
     * ({@code pollThreshold - permits}) or what is pending. Written by the poll thread before it parks, read by
     * {@link RoomWait#wake()}.
     */
    private volatile int roomWanted;
    /** Room wake-ups that unparked the poll thread (tests). */
    private final AtomicLong roomWakeups = new AtomicLong();
    /** Room wake-ups that found less than {@link #roomWanted} and kept the poll thread parked (tests). */
    private final AtomicLong roomDeclined = new AtomicLong();

    /**
     * The first close's parameters, set once by CAS before that close moves the state to STOPPING; read by the poll
     * thread. One object, so a close that loses a race to another cannot change the winner's deadline or mode.
     */
    private final AtomicReference<CloseRequest> closeRequest = new AtomicReference<>();
    /** Set by any thread that wants a commit soon ({@link ReceivedRecord#commitAsync()}); cleared by the poll thread. */
    private volatile boolean commitRequested;
    /** The age of the oldest unacknowledged record over all partitions, in nanos; written by the poll thread. */
    private volatile long oldestUnacknowledgedNanos;
    /** How many partitions are paused at maxUnacknowledged; written by the poll thread. */
    private volatile int partitionsAtBound;
    /**
     * The last snapshot of {@link #stats()}: an immutable record written (volatile store) by the poll thread only,
     * read by any thread.
     */
    private volatile KafkaReceiverStats stats;
    /** Written by the poll thread only. */
    private volatile boolean paused;
    /** The poll thread's registration for room, or null; written by the poll thread (see {@link RoomWait}). */
    private volatile RoomWait roomWait;

    // ---- written by tests only (any thread, any time); read by the poll thread on slow paths
    /**
     * {@link #LONG_OPEN_NANOS}, unless a test changes it: not API, no builder knob. Volatile so that a test may
     * change it while the receiver runs (a test first acknowledges what must not be reported, then lowers it); read
     * once per {@code checkBounds}.
     */
    volatile long longOpenNanos = LONG_OPEN_NANOS;
    /**
     * {@link #COMMIT_FAILURE_GRACE_NANOS}, unless a test shortens it: not API, no builder knob. Read by the poll thread
     * in the callback of a periodic commit that failed with a non-retriable error.
     */
    volatile long commitFailureGraceNanos = COMMIT_FAILURE_GRACE_NANOS;
    /** The last synchronous commit failed with RebalanceInProgressException (a poll completes it). Poll thread. */
    private boolean rebalancing;
    /** When the current run of failing polls (authorization errors) began, or 0. Poll thread. */
    private long pollFailingSince;

    // ---- poll thread only
    private final Map<TopicPartition, PartitionAcks> ledgers = new HashMap<>();
    private final ArrayDeque<PendingRun<K, V>> pending = new ArrayDeque<>();
    private final ArrayList<ReceivedRecord<K, V>> batch;
    private final PartitionAcks.CommitRequests commitRequest = this::commitSoon;
    /** Partitions paused because their unacknowledged records reached {@code maxUnacknowledged}. */
    private final Set<TopicPartition> atBound = new HashSet<>();
    /** Partitions warned about (a long pause or a long-open oldest record), until they recover. */
    private final Set<TopicPartition> warned = new HashSet<>();
    /** When the periodic commits began to fail with a non-retriable error, or 0. */
    private long commitFailingSince;
    private long epochs;
    /** Mailbox reservations held: each lets one record in without finding the mailbox full. */
    private int permits;
    private long lastPoll;
    private long lastCommit;
    /** A fatal error met inside a rebalance callback, rethrown after the poll returns. */
    private RuntimeException callbackFailure;
    /** When {@link #stats} was last refreshed, and its lag; the lag of that refresh (-1: not known). */
    private long lastStatsRefresh;
    private long lastLagRefresh;
    private long lag = -1L;
    /** Commits completed, each way, their total times and the last one's ({@link #stats}). */
    private long commits;
    private long failedCommits;
    private long commitNanos;
    private long failedCommitNanos;
    private long lastCommitNanos;

    private KafkaMailboxReceiver(ReceiverSettings<K, V> settings) {
        this.settings = settings;
        this.topics = settings.topics;
        this.topicPattern = settings.topicPattern;
        this.assignment = settings.assignment;
        this.onAssigned = settings.onAssigned;
        this.onRevoked = settings.onRevoked;
        this.onLost = settings.onLost;
        this.groupId = settings.groupId;
        this.topicsLabel = settings.topicsLabel;
        this.label = settings.label;
        this.stats = new KafkaReceiverStats(groupId, topicsLabel, 0, 0, 0, 0L, 0L, -1L, 0L, 0L, 0L, 0L, 0L);
        this.maxUnacknowledged = settings.maxUnacknowledged;
        this.mailbox = Mailboxes.<ReceivedRecord<K, V>>builder().capacity(settings.capacity)
                .name("kafka-receiver-" + String.join(",", topics)).build();
        this.ring = MailboxRing.of(mailbox);
        this.pollThreshold = settings.pollThreshold;
        this.batch = new ArrayList<>(pollThreshold);
        this.commitIntervalNanos = settings.commitIntervalNanos;
        this.pollTimeout = settings.pollTimeout;
        this.revocationTimeoutNanos = settings.revocationTimeoutNanos;
        this.deserializationErrorHandler = settings.deserializationErrorHandler;
        this.consumer = settings.newConsumer();
        this.pollThread = settings.newPollThread(this::run);
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
        return mailbox;
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

    /** @return null if this is the first receive() and the receiver is new, else the refusal */
    IllegalStateException claimReceive() {
        if (!receiveClaimed.compareAndSet(false, true)) {
            return new IllegalStateException("receive() subscribed twice: one receive() subscription per receiver");
        }
        if (state.get() != NEW) {
            return new IllegalStateException("receive() on a receiver already started or closed: state="
                    + stateName());
        }
        return null;
    }

    Duration receiveCloseTimeout() {
        return settings.revocationTimeout;
    }

    String threadName(String role) {
        return settings.threadName(role);
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
        if (!state.compareAndSet(NEW, RUNNING)) {
            throw new IllegalStateException("receiver already started or closed: state=" + stateName());
        }
        try {
            pollThread.start();
        } catch (Throwable t) {
            // N9: no poll thread will ever run: end here, as a close before start does, and say why
            state.set(CLOSED);
            try {
                consumer.close(CloseOptions.timeout(Duration.ZERO));
            } catch (RuntimeException e) {
                t.addSuppressed(e);
            } finally {
                mailbox.closeExceptionally(t);
                terminated.countDown();
                failConsumerTasks();
                closed.complete(null);
            }
            throw t;
        }
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
    public <T> CompletionStage<T> doOnConsumer(
            Function<? super org.apache.kafka.clients.consumer.Consumer<K, V>, ? extends T> action) {
        Objects.requireNonNull(action, "action");
        final CompletableFuture<T> result = new CompletableFuture<>();
        if (Thread.currentThread() == pollThread && state.get() == RUNNING) {
            // N6: on the poll thread (a listener, receive(Schedulers.immediate())): now, not at the next turn, which
            // a caller blocking on the stage would never let come
            try {
                result.complete(action.apply(consumer));
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
            return result;
        }
        consumerTasks.add(new ConsumerTask() {
            @Override
            public void run() {
                try {
                    result.complete(action.apply(consumer));
                } catch (Throwable t) {
                    result.completeExceptionally(t);
                }
            }

            @Override
            public void fail(IllegalStateException closedError) {
                result.completeExceptionally(closedError);
            }
        });
        if (state.get() == CLOSED) {
            failConsumerTasks(); // NOTE: raced finish(): whoever drains first fails it; completion is once
        } else {
            LockSupport.unpark(pollThread);
        }
        return result;
    }

    /** An action of {@link #doOnConsumer}, with the future it completes. */
    private interface ConsumerTask {
        /** Poll thread. */
        void run();

        /** Any thread, once the receiver is closed. */
        void fail(IllegalStateException closedError);
    }

    /** Poll thread: runs the {@link #doOnConsumer} actions submitted so far. */
    private void runConsumerTasks() {
        ConsumerTask task;
        while ((task = consumerTasks.poll()) != null) {
            task.run();
        }
    }

    private void failConsumerTasks() {
        ConsumerTask task;
        while ((task = consumerTasks.poll()) != null) {
            task.fail(new IllegalStateException("receiver closed: " + label));
        }
    }

    /**
     * {@return whether the receiver has paused its partitions because the mailbox has no room for a poll (a
     *          snapshot: it flips as the consumer frees room)}
     */
    public boolean paused() {
        return paused;
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
        return Duration.ofNanos(oldestUnacknowledgedNanos);
    }

    /**
     * {@return how many partitions are paused because their unacknowledged records reached
     *          {@link Builder#maxUnacknowledged} (a snapshot, updated by the poll thread at each turn)}
     */
    public int partitionsAtUnacknowledgedBound() {
        return partitionsAtBound;
    }

    /**
     * The receiver's figures for monitoring (partitions assigned and paused, records unacknowledged, the oldest
     * one's age, the consumer's lag, commits and their latency);
     * {@code dev.mighty.mailbox.kafka.micrometer.KafkaReceiverMetrics} turns them into meters. Any thread; wait-free, allocates nothing.
     * <p>The poll thread refreshes the snapshot at a turn at least 100 ms after the last refresh (the lag at most once
     * a second), after each commit it completes, and when it finishes; before {@link #start()} every figure is 0 (the
     * lag -1). Refreshing costs the poll thread a scan of each partition's ledger from its oldest unacknowledged record
     * (one flag per record) and, once a second, a {@code Consumer.currentLag} per assigned partition (a local lookup
     * for the classic protocol, a round trip to the consumer's background thread for {@code group.protocol=consumer});
     * nothing is added to the acknowledgement path.
     *
     * @return the last snapshot: one cut of the poll thread's state at its refresh (see
     *         {@link KafkaReceiverStats} for which figures are racy)
     */
    public KafkaReceiverStats stats() {
        return stats;
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
     * <p>One deadline, {@code timeout} from now, bounds the whole close: the wait for acknowledgements ends early
     * enough to leave the final {@code commitSync} and the consumer's close part of it (half of the timeout, at
     * most 5 s), and those two share what remains (at least 500 ms each). A
     * thread that acknowledged records of a partition still open is not waited for: called from the thread that
     * acknowledges, close does not wait for acknowledgements that cannot come while it blocks.
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
        stop(timeout, false);
        if (Thread.currentThread() == pollThread) {
            return; // subscriber code running on the poll thread: it stops when this returns
        }
        final long waitNanos = saturatedNanos(timeout) + 2 * FINISH_FLOOR.toNanos();
        try {
            if (!terminated.await(waitNanos, TimeUnit.NANOSECONDS)) {
                LOG.log(Level.WARNING, "receiver {0}: close({1}) returns before the poll thread finished; the close"
                        + " completes in the background", label, timeout);
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
        stop(timeout, false);
        return closed.copy();
    }

    private static void checkTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
    }

    /**
     * Ends the receiver as if its process died: no wait for acknowledgements and no final commit (what the
     * commit interval committed stays). The consumer is closed (leaving the group) and the mailbox closed.
     * For tests of redelivery.
     */
    void halt() {
        stop(Duration.ZERO, true);
        try {
            terminated.await(FATAL_FINISH.toNanos() * 2, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void stop(Duration timeout, boolean halt) {
        for (;;) {
            final ReceiverState s = state.get();
            if (s == NEW) {
                if (state.compareAndSet(NEW, CLOSED)) {
                    try {
                        consumer.close(CloseOptions.timeout(Duration.ZERO));
                    } finally {
                        mailbox.close();
                        terminated.countDown();
                        failConsumerTasks();
                        closed.complete(null);
                    }
                    return;
                }
            } else if (s == RUNNING) {
                // the first close decides (N8): its parameters are published whole, before the state moves
                if (closeRequest.compareAndSet(null, new CloseRequest(saturatedNanos(timeout), halt))) {
                    state.compareAndSet(RUNNING, STOPPING); // fails only if the poll thread is stopping by itself
                    consumer.wakeup(); // a blocked poll returns at once (WakeupException)
                    LockSupport.unpark(pollThread);
                }
                return;
            } else {
                return; // stopping or closed already
            }
        }
    }

    // ------------------------------------------------------------------ the poll thread

    private void run() {
        Throwable failure = null;
        try {
            final Rebalance rebalance = new Rebalance();
            if (topicPattern != null) {
                consumer.subscribe(topicPattern, rebalance);
            } else if (assignment != null) {
                consumer.assign(assignment); // no group management: the listener is ours to call
                rebalance.onPartitionsAssigned(assignment);
                rethrowCallbackFailure();
            } else {
                consumer.subscribe(topics, rebalance);
            }
            lastCommit = lastPoll = System.nanoTime();
            lastStatsRefresh = lastLagRefresh = lastPoll - LAG_INTERVAL_NANOS; // the first turn refreshes stats()
            while (state.get() == RUNNING) {
                if (ring.isClosed()) {
                    break; // closed by someone else: stop as for close(ZERO)
                }
                runConsumerTasks();
                final boolean flushed = drainPending();
                if (flushed && reserveForPoll()) {
                    if (paused) {
                        resumeAll();
                    }
                    checkBounds();
                    poll(pollTimeout);
                } else {
                    final long now = System.nanoTime();
                    final long sinceLastPoll = now - lastPoll;
                    if (sinceLastPoll >= pollTimeout.toNanos()) {
                        if (!paused) {
                            pauseAll();
                        }
                        checkBounds();
                        poll(PAUSED_POLL); // liveness: paused partitions return nothing
                    } else if (awaitingRoom()) {
                        LockSupport.parkNanos(this, pollTimeout.toNanos() - sinceLastPoll);
                    }
                }
                if (commitRequested || System.nanoTime() - lastCommit >= commitIntervalNanos) {
                    commitRequested = false;
                    commitAcknowledgedAsync();
                    lastCommit = System.nanoTime();
                }
            }
        } catch (Throwable t) {
            failure = t;
            LOG.log(Level.ERROR, () -> "receiver " + label + ": fatal error, closing", t);
        }
        finish(failure);
    }

    /**
     * Pauses the partitions whose unacknowledged records reached {@code maxUnacknowledged}, resumes those back
     * under it (unless all are paused for room), and publishes the oldest-unacknowledged age. Poll thread, before
     * each poll: a partition under the bound gets at most one poll's records more.
     */
    private void checkBounds() {
        final long now = System.nanoTime();
        final boolean refresh = now - lastStatsRefresh >= STATS_INTERVAL_NANOS;
        final long longOpen = longOpenNanos;
        long oldest = 0L;
        long open = 0L;
        List<TopicPartition> toPause = null;
        List<TopicPartition> toResume = null;
        for (PartitionAcks ledger : ledgers.values()) {
            final TopicPartition partition = ledger.partition;
            if (refresh) {
                // exact, a scan of the open span, which the bound below keeps to maxUnacknowledged plus one poll
                open += ledger.unacknowledged();
            }
            // N1: the open span (oldest unacknowledged to newest), O(1): not the count of unacknowledged records,
            // which one record dropped without an ack among acknowledged ones never brings to the bound
            final boolean over = ledger.openSpan() >= maxUnacknowledged;
            if (over && atBound.add(partition)) {
                (toPause == null ? toPause = new ArrayList<>() : toPause).add(partition);
            } else if (!over && atBound.remove(partition)) {
                (toResume == null ? toResume = new ArrayList<>() : toResume).add(partition);
            }
            final long age = ledger.oldestUnacknowledgedNanos(now);
            oldest = Math.max(oldest, age);
            if (age >= longOpen) {
                if (warned.add(partition)) {
                    final long offset = ledger.commitOffset();
                    LOG.log(Level.WARNING, "receiver {0}: partition {1}: the oldest unacknowledged record (offset"
                            + " {2}) has been open for {3} s{4}; its committed offset cannot move past it", label,
                            partition, offset, TimeUnit.NANOSECONDS.toSeconds(age),
                            over ? ", and the partition is paused at maxUnacknowledged=" + maxUnacknowledged : "");
                    if (MailboxEvents.enabled()) {
                        recordUnacknowledged(ledger, offset, age, over);
                    }
                }
            } else if (age == 0L) {
                warned.remove(partition);
            }
        }
        if (toPause != null) {
            consumer.pause(toPause);
            LOG.log(Level.DEBUG, "receiver {0}: paused at maxUnacknowledged={1}: {2}", label, maxUnacknowledged,
                    toPause);
        }
        if (toResume != null && !paused) {
            consumer.resume(toResume); // while paused for room, resumeAll() resumes them
        }
        oldestUnacknowledgedNanos = oldest;
        partitionsAtBound = atBound.size();
        if (refresh) {
            lastStatsRefresh = now;
            if (now - lastLagRefresh >= LAG_INTERVAL_NANOS) {
                lastLagRefresh = now;
                lag = currentLag();
            }
            final int assigned = ledgers.size();
            stats = new KafkaReceiverStats(groupId, topicsLabel, assigned,
                    paused ? assigned : atBound.size(), atBound.size(), open, oldest, lag, commits, failedCommits,
                    commitNanos, failedCommitNanos, lastCommitNanos);
        }
    }

    /**
     * @return the consumer's lag summed over the assigned partitions whose lag it knows, or -1 if it knows none.
     *         Poll thread.
     */
    private long currentLag() {
        // N13: from the consumer's own fetch metrics ("records-lag" per partition, updated by each fetch), not
        // currentLag(partition): under group.protocol=consumer each call is a round trip to the consumer's network
        // thread, once per partition per refresh. The topic tag may carry '.' as '_' (and 4.x records both forms),
        // so names are compared in that form and each partition counted once.
        final Map<String, Double> byPartition = new HashMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
            final MetricName name = e.getKey();
            if (!"records-lag".equals(name.name()) || !"consumer-fetch-manager-metrics".equals(name.group())) {
                continue;
            }
            final String topic = name.tags().get("topic");
            final String partition = name.tags().get("partition");
            final Object value = e.getValue().metricValue();
            if (topic != null && partition != null && value instanceof Double && !((Double) value).isNaN()) {
                byPartition.put(topic.replace('.', '_') + '/' + partition, (Double) value);
            }
        }
        long sum = 0L;
        boolean known = false;
        for (TopicPartition partition : ledgers.keySet()) {
            final Double lag = byPartition.get(partition.topic().replace('.', '_') + '/' + partition.partition());
            if (lag != null) {
                sum += Math.max(0L, lag.longValue());
                known = true;
            }
        }
        return known ? sum : -1L;
    }

    /** Poll thread: a commit completed after {@code nanos}; republishes {@link #stats} with it. */
    private void commitDone(boolean succeeded, long nanos) {
        if (succeeded) {
            commits++;
            commitNanos += nanos;
        } else {
            failedCommits++;
            failedCommitNanos += nanos;
        }
        lastCommitNanos = nanos;
        stats = stats.withCommits(commits, failedCommits, commitNanos, failedCommitNanos, lastCommitNanos);
    }

    /**
     * Before the poll thread parks for room: publishes how much room it waits for ({@link #roomWanted}) and
     * registers a {@link RoomWait}, unless one is live (the poll thread woke for liveness, not for room: the
     * registration it made stays, so a stalled consumer does not grow the mailbox's waiter queue).
     *
     * @return false if the room is there already (banked by a wake-up, or free now): do not park
     */
    private boolean awaitingRoom() {
        final int wanted = wantedRoom();
        roomWanted = wanted; // volatile store, then the load of banked: pairs with RoomWait.wake()'s add, then load
        if (banked.get() >= wanted) {
            return false;
        }
        final RoomWait current = roomWait;
        if (current != null && current.live) {
            return true; // registered, not yet woken
        }
        final RoomWait w = new RoomWait();
        roomWait = w;
        w.wake(); // the first turn, here: reserves what is free, or registers
        if (!w.live) {
            roomWait = null; // room now (banked): the next turn takes it
            return false;
        }
        return true;
    }

    /**
     * A commit waiter was queued: the poll thread commits at its next turn. Asked on the poll thread itself (a
     * listener, {@code doOnConsumer}, {@code receive(Schedulers.immediate())}), a wait for the next turn would wait
     * for this very thread ({@code commit().block()} deadlocked, N6): it commits now, synchronously, and a waiter the
     * commit does not cover (records before it not acknowledged yet) fails at once, saying why.
     */
    private void commitSoon(PartitionAcks ledger, CompletableFuture<Void> done) {
        if (Thread.currentThread() != pollThread) {
            commitRequested = true;
            return;
        }
        try {
            commitAcknowledged(List.of(ledger), REVOCATION_COMMIT_TIMEOUT);
            ledger.completeCovered();
        } catch (RuntimeException e) {
            done.completeExceptionally(e);
            return;
        }
        if (!done.isDone()) {
            done.completeExceptionally(new IllegalStateException("commit() on the receiver's poll thread of a record "
                    + "that records delivered before it, not acknowledged yet, keep from being committed: only this "
                    + "thread could deliver the commit later, so it would wait for itself: partition="
                    + ledger.partition + ", committed=" + ledger.committed));
        }
    }

    /** @return the reservations, beyond {@link #permits}, worth unparking the poll thread for. Poll thread. */
    private int wantedRoom() {
        if (pending.isEmpty()) {
            return Math.max(1, pollThreshold - permits);
        }
        long left = 0L; // a poll overshot the room (max.poll.records > capacity): what is pending, up to a poll's worth
        for (PendingRun<K, V> run : pending) {
            left += run.records.size() - run.next;
        }
        return (int) Math.max(1L, Math.min(left, pollThreshold) - permits);
    }

    /** Poll thread: the registration (if any) is given up; its loop withdraws it (a wake-up of it is handed on). */
    private void endRoomWait() {
        final RoomWait w = roomWait;
        if (w != null) {
            roomWait = null;
            w.live = false;
            w.wake(); // the loop sees live == false and withdraws its ticket
        }
    }

    /** Poll thread: takes the reservations a {@link RoomWait} banked. */
    private void takeBanked() {
        if (banked.get() != 0) {
            permits += banked.getAndSet(0);
        }
    }

    /** Any thread, once the mailbox is closed: returns what was banked and not taken. */
    private void returnBanked() {
        final int left = banked.getAndSet(0);
        if (left > 0) {
            ring.releaseReserved(left);
        }
    }

    /**
     * The poll thread's wait for room (B11: it is woken when a poll's worth is free, not per freed slot). Registered
     * with the mailbox's room queue, it is woken by whoever frees room (the consumer's receive, on the consumer's
     * thread) and then, on that thread: reserves the free room on the poll thread's behalf ({@link #banked}); if
     * {@code banked} now covers {@link #roomWanted}, unparks the poll thread; else registers itself again and
     * returns, leaving the poll thread parked. The mailbox's own waker thus pays a reservation and a queue node per
     * wake-up while the receiver is paused, instead of an unpark (a system call) and a poll-thread turn per slot.
     * (A batch receive of {@code k} records wakes the registration up to {@code k} times, one per freed slot: the
     * first wake-up reserves the batch's room, the others find none and register again.)
     * <p>No wake-up is lost: the registration is a {@link RoomTicket}, so a wake-up is a token that the wait either
     * spends on a reservation, or keeps by registering again (at the head, if its retry found no room), or hands on
     * when the wait ends ({@link RoomTicket#withdraw()}). {@code roomWanted} and {@code banked} form a Dekker pair
     * with the poll thread (it stores {@code roomWanted} then loads {@code banked}; we add to {@code banked} then
     * load {@code roomWanted}), so either we see what it wants or it sees what we banked and does not park. The loop
     * is bounded: after {@link #ROOM_ROUNDS} rounds that lost the room to a race we unpark anyway.
     * <p>Threads: the wait's turns are serial (a WIP counter): the poll thread runs the first one and the one that
     * ends the wait ({@link #endRoomWait()}), wakers the others; only a turn touches the ticket. Banked reservations
     * are taken by the poll thread ({@link #takeBanked()}) and returned by whoever sees the mailbox closed after
     * banking ({@link #returnBanked()}), so none leaks.
     */
    private final class RoomWait implements Wakeable {
        /** Cleared when the wait ends: a turn unparked the poll thread, or the poll thread gave it up. */
        volatile boolean live = true;
        private final RoomTicket ticket = ring.roomTicket(this);
        private final AtomicInteger wip = new AtomicInteger();
        /** The poll thread's first turn has run (turn-confined): later turns are wake-ups, counted for tests. */
        private boolean started;

        @Override
        public void wake() {
            if (wip.getAndIncrement() != 0) {
                return; // the running turn goes round again
            }
            int missed = 1;
            do {
                turn();
                missed = wip.addAndGet(-missed);
            } while (missed != 0);
        }

        private void turn() {
            final boolean wakeUp = started; // the first turn is the poll thread's registration, not a wake-up
            started = true;
            if (!live) {
                ticket.withdraw(); // the wait is over: a wake-up that came too late goes to the next waiter
                return;
            }
            for (int round = 0; round < ROOM_ROUNDS && state.get() == RUNNING; round++) {
                final int got = ring.reserve(ring.capacity());
                if (got > 0) {
                    ticket.claimed(); // the room a wake-up was for went into our reservation
                    banked.getAndAdd(got);
                    if (ring.isClosed()) {
                        returnBanked(); // the close's own returnBanked() may have run before our add
                        break;
                    }
                }
                if (banked.get() >= roomWanted) {
                    break; // a poll's worth: unpark
                }
                if (ticket.await()) {
                    if (wakeUp) {
                        roomDeclined.incrementAndGet();
                    }
                    return; // registered (again): the poll thread stays parked
                }
                // room appeared after our reservation (or the close): reserve it too
            }
            live = false;
            ticket.withdraw();
            if (wakeUp) {
                roomWakeups.incrementAndGet();
                LockSupport.unpark(pollThread);
            }
        }
    }

    /** @return whether the poll thread holds room for a whole poll, reserving more if needed */
    private boolean reserveForPoll() {
        if (permits < pollThreshold) {
            takeBanked();
            if (permits < pollThreshold) {
                permits += ring.reserve(ring.capacity() - permits);
            }
        }
        if (permits >= pollThreshold) {
            if (roomWait != null) {
                endRoomWait(); // polling again: a wait still registered is void
            }
            return true;
        }
        return false;
    }

    private void poll(Duration timeout) {
        final ConsumerRecords<K, V> records;
        try {
            records = consumer.poll(timeout);
        } catch (WakeupException e) {
            rethrowCallbackFailure(); // a fatal revocation commit that the wake-up raced is not lost
            return; // close() woke us
        } catch (RecordDeserializationException e) {
            lastPoll = System.nanoTime();
            rethrowCallbackFailure();
            if (deserializationErrorHandler == null) {
                throw e;
            }
            skipPoisonRecord(e);
            return;
        } catch (AuthorizationException e) {
            // N12: the same grace as a commit's authorization error (an ACL being fixed), not fatal at once
            final long now = System.nanoTime();
            if (pollFailingSince == 0L) {
                pollFailingSince = now;
            }
            if (now - pollFailingSince >= commitFailureGraceNanos) {
                throw e;
            }
            LOG.log(Level.WARNING, "receiver {0}: a poll failed ({1}); retrying for up to {2} s before that is fatal",
                    label, e.toString(), TimeUnit.NANOSECONDS.toSeconds(commitFailureGraceNanos));
            LockSupport.parkNanos(this, timeout.toNanos()); // not a hot loop; close() unparks
            return;
        }
        pollFailingSince = 0L;
        lastPoll = System.nanoTime();
        rethrowCallbackFailure();
        final Map<TopicPartition, OffsetAndMetadata> next = records.nextOffsets();
        final Set<TopicPartition> withRecords = records.partitions();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
            if (!withRecords.contains(e.getKey())) {
                // the position moved past offsets with no record for us (transaction markers, aborted records under
                // read_committed): nothing of this partition is pending (a poll runs only when nothing is)
                final PartitionAcks ledger = ledgers.get(e.getKey());
                if (ledger != null) {
                    ledger.advanceTo(e.getValue());
                }
            }
        }
        if (records.isEmpty()) {
            return;
        }
        for (TopicPartition partition : withRecords) {
            final List<ConsumerRecord<K, V>> run = records.records(partition);
            PartitionAcks ledger = ledgers.get(partition);
            if (ledger == null) {
                if (!consumer.assignment().contains(partition)) {
                    LOG.log(Level.WARNING, "receiver {0}: {1} records of {2}, which is not assigned, not delivered"
                            + " (the partition's owner gets them)", label, run.size(), partition);
                    continue;
                }
                ledger = newLedger(partition); // assigned without our listener seeing it: deliver, never drop
            } else if (!run.isEmpty() && run.get(0).offset() <= ledger.lastDelivered()) {
                // the position moved backwards (a seek): a new epoch, so no acknowledgement of the old entries
                // and none of the new ones can commit past the other's records
                LOG.log(Level.INFO, "receiver {0}: {1} went back from offset {2} to {3}: new assignment epoch",
                        label, partition, ledger.lastDelivered(), run.get(0).offset());
                ledger.revoke();
                ledger = newLedger(partition);
            }
            pending.add(new PendingRun<>(ledger, run, next.get(partition)));
        }
        drainPending();
    }

    private PartitionAcks newLedger(TopicPartition partition) {
        final PartitionAcks ledger = new PartitionAcks(partition, ++epochs, commitRequest);
        final PartitionAcks previous = ledgers.put(partition, ledger);
        if (previous != null) {
            previous.revoke();
        }
        return ledger;
    }

    private void skipPoisonRecord(RecordDeserializationException e) {
        // NOTE: records of this partition before the bad one were returned by an earlier poll and are delivered
        // already (a normal poll runs only once nothing is pending), so the skipped entry keeps the ledger's order.
        final TopicPartition partition = e.topicPartition();
        deserializationErrorHandler.accept(e);
        final PartitionAcks ledger = ledgers.get(partition);
        if (ledger != null) {
            ledger.skip(e.offset());
        }
        consumer.seek(partition, e.offset() + 1L);
    }

    /**
     * Sends what is pending, as far as the reservations go (reserving more as it goes).
     *
     * @return true if nothing is pending any more
     */
    private boolean drainPending() {
        PendingRun<K, V> run;
        boolean flushed = true;
        if (!pending.isEmpty()) {
            takeBanked();
        }
        while ((run = pending.peek()) != null) {
            if (run.ledger.isRevoked()) {
                pending.poll(); // not delivered, not in the ledger: the next owner (or the new epoch) gets these
                LOG.log(Level.DEBUG, "receiver {0}: {1} polled records of revoked {2} not delivered", label,
                        run.records.size() - run.next, run.ledger.partition);
                continue;
            }
            final List<ConsumerRecord<K, V>> records = run.records;
            final PartitionAcks ledger = run.ledger;
            while (run.next < records.size()) {
                if (permits == 0 && (permits = ring.reserve(ring.capacity())) == 0) {
                    flushed = false;
                    break;
                }
                final int n = Math.min(permits, records.size() - run.next);
                for (int i = 0; i < n; i++) {
                    batch.add(ledger.deliver(records.get(run.next++))); // the entry exists before the send
                }
                permits -= n;
            }
            if (!flushed) {
                break;
            }
            if (run.nextOffset != null) {
                ledger.advanceTo(run.nextOffset); // every record up to the position is in the ledger now
            }
            pending.poll();
        }
        if (!batch.isEmpty()) {
            final int size = batch.size();
            final int sent = publish(batch);
            batch.clear();
            if (sent < size) {
                // closed by someone else: the unsent entries stay unacknowledged, so nothing past them is committed
                pending.clear();
                return true;
            }
        }
        return flushed;
    }

    /**
     * The one place records enter the mailbox: a batched send of the whole list with one claim, on reservations
     * the poll thread holds, so it never finds the mailbox full.
     *
     * @return how many were sent: {@code records.size()}, or 0 if the mailbox was closed (then nothing was)
     */
    private int publish(List<ReceivedRecord<K, V>> records) {
        return ring.sendReservedMany(records, 0, records.size());
    }

    private void pauseAll() {
        consumer.pause(consumer.assignment());
        paused = true;
    }

    private void resumeAll() {
        final Set<TopicPartition> resume = new HashSet<>(consumer.paused());
        resume.removeAll(atBound); // those stay paused until their acknowledgements come
        consumer.resume(resume);
        paused = false;
    }

    /**
     * The {@link UnacknowledgedRecordEvent} of the warning just logged, through {@link KafkaJfr} (so that this class
     * names no {@code jdk.jfr} type). Poll thread. A JFR call that throws switches this library's events off for good
     * ({@link MailboxEvents#recordingFailed()}): observability never fails the poll loop.
     */
    private void recordUnacknowledged(PartitionAcks ledger, long offset, long age, boolean atBound) {
        try {
            KafkaJfr.unacknowledgedRecord(groupId, ledger, offset, age, atBound);
        } catch (RuntimeException | LinkageError e) {
            MailboxEvents.recordingFailed();
        }
    }

    /** @return for each ledger in {@code which} whose offset moved, that offset (with the ledger, by partition) */
    private static Map<TopicPartition, OffsetAndMetadata> movedOffsets(Collection<PartitionAcks> which) {
        final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (PartitionAcks ledger : which) {
            final long offset = ledger.commitOffset();
            if (offset >= 0 && offset != ledger.committed) {
                // with the leader epoch of the last record covered: the group's next owner validates its position
                // against the log with it (truncation after an unclean leader change is detected, not skipped)
                offsets.put(ledger.partition, new OffsetAndMetadata(offset, ledger.commitEpoch(), ""));
            }
        }
        return offsets;
    }

    /** Marks the ledgers of {@code which} committed up to {@code offsets}. Poll thread. */
    private static void committed(Collection<PartitionAcks> which, Map<TopicPartition, OffsetAndMetadata> offsets) {
        for (PartitionAcks ledger : which) {
            final OffsetAndMetadata committed = offsets.get(ledger.partition);
            if (committed != null && !ledger.isRevoked()) {
                ledger.committed(committed.offset());
            }
        }
    }

    /**
     * The periodic commit: asynchronous, so the poll thread goes on polling; its callback runs on the poll thread
     * inside a later poll. A failure is logged and the next turn commits again (the offsets only grow); a
     * non-retriable one that lasts {@link #commitFailureGraceNanos} (30 s; tests shorten it) is fatal: the failing
     * commit's error, raised on the poll thread after the poll that ran its callback, once the first failure of the
     * run (the first since the last successful periodic commit) is that old. Authorization errors get that grace, in
     * case the ACL is being fixed.
     */
    private void commitAcknowledgedAsync() {
        final List<PartitionAcks> which = new ArrayList<>(ledgers.values());
        for (PartitionAcks ledger : which) {
            ledger.completeCovered(); // a commit() whose record an earlier commit covered completes now (N3)
        }
        final Map<TopicPartition, OffsetAndMetadata> offsets = movedOffsets(which);
        if (offsets.isEmpty()) {
            return;
        }
        final long start = System.nanoTime();
        consumer.commitAsync(offsets, (done, error) -> {
            commitDone(error == null, System.nanoTime() - start);
            if (error == null) {
                commitFailingSince = 0L;
                committed(which, offsets);
            } else if (error instanceof RetriableException || error instanceof CommitFailedException
                    || error instanceof RebalanceInProgressException) {
                LOG.log(Level.INFO, "receiver {0}: a periodic commit failed ({1}); the next one retries", label,
                        error.toString());
            } else {
                final long now = System.nanoTime();
                final long grace = commitFailureGraceNanos;
                if (commitFailingSince == 0L) {
                    commitFailingSince = now;
                }
                if (now - commitFailingSince >= grace) {
                    if (callbackFailure == null) {
                        callbackFailure = error instanceof RuntimeException ? (RuntimeException) error
                                : new IllegalStateException(error);
                    }
                } else {
                    LOG.log(Level.WARNING, "receiver {0}: a periodic commit failed ({1}); retrying for up to {2} s"
                            + " before that is fatal", label, error.toString(),
                            TimeUnit.NANOSECONDS.toSeconds(grace));
                }
            }
        });
    }

    /** Commits synchronously, bounded by {@code timeout}, for each ledger whose offset moved. Poll thread. */
    private void commitAcknowledged(Collection<PartitionAcks> which, Duration timeout) {
        if (which.isEmpty()) {
            return;
        }
        final Map<TopicPartition, OffsetAndMetadata> offsets = movedOffsets(which);
        if (offsets.isEmpty()) {
            return;
        }
        final long start = System.nanoTime();
        final boolean done;
        try {
            done = commitSync(offsets, timeout);
        } catch (RuntimeException e) {
            commitDone(false, System.nanoTime() - start);
            throw e;
        }
        commitDone(done, System.nanoTime() - start);
        if (done) {
            committed(which, offsets);
        }
    }

    /** @return false if the commit failed because of a rebalance (not fatal); throws what is fatal */
    private boolean commitSync(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
        rebalancing = false;
        final long deadline = System.nanoTime() + saturatedNanos(timeout);
        for (int attempt = 1; ; attempt++) {
            final long remaining = Math.max(deadline - System.nanoTime(), 0L);
            try {
                consumer.commitSync(offsets, Duration.ofNanos(remaining));
                return true;
            } catch (WakeupException e) {
                // close() woke a commit instead of a poll: the wake-up is spent; commit again
                if (attempt >= COMMIT_ATTEMPTS + 1) {
                    throw e;
                }
            } catch (CommitFailedException | RebalanceInProgressException e) {
                LOG.log(Level.INFO, "receiver {0}: a commit failed because the group rebalanced ({1}); the"
                        + " partitions' next owners get the records again", label, e.toString());
                rebalancing = e instanceof RebalanceInProgressException; // still under way: a poll completes it
                return false; // the group moved on: the next owner gets the records again
            } catch (RetriableException e) {
                if (attempt >= COMMIT_ATTEMPTS || System.nanoTime() - deadline >= 0) {
                    LOG.log(Level.WARNING, "receiver {0}: a commit failed after {1} attempts ({2})", label, attempt,
                            e.toString());
                    throw e;
                }
                LockSupport.parkNanos(this, Math.min(TimeUnit.MILLISECONDS.toNanos(50L << attempt),
                        Math.max(deadline - System.nanoTime(), 0L))); // back off before the next attempt
            }
        }
    }

    private void rethrowCallbackFailure() {
        final RuntimeException failure = callbackFailure;
        if (failure != null) {
            callbackFailure = null;
            throw failure;
        }
    }

    /** Waits until every ledger in {@code which} is acknowledged, or the deadline. Poll thread. */
    private void awaitAcknowledged(Collection<PartitionAcks> which, long deadline) {
        for (;;) {
            boolean all = true;
            for (PartitionAcks ledger : which) {
                if (!ledger.allAcknowledged()) {
                    all = false;
                    break;
                }
            }
            if (all || System.nanoTime() - deadline >= 0) {
                return;
            }
            LockSupport.parkNanos(this, ACK_WAIT_STEP_NANOS);
        }
    }

    /**
     * The close's wait for acknowledgements (N7): only for the records handed out (taken from the mailbox), not for
     * those still in it, which nobody may take any more. Poll thread, in {@link #finish}.
     * <p>NOTE: it parks between its looks and does not poll. A poll here would let a rebalance begin in the middle
     * of the close; the final commit then fails with {@code RebalanceInProgressException} and the records
     * acknowledged meanwhile go again to the next owner (seen once in {@code KafkaRebalanceProtocolsTest} under
     * {@code CooperativeStickyAssignor}). The wait is bounded by the close's acknowledgement deadline.
     */
    private void awaitHandedOutAcknowledged(long deadline) {
        for (;;) {
            long open = 0L;
            for (PartitionAcks ledger : ledgers.values()) {
                open += ledger.unacknowledged();
            }
            // still in the mailbox: delivered into the ledgers, unacknowledged, and not handed out (pending records
            // are not in the ledgers yet)
            final long notHandedOut = ring.size();
            if (open <= notHandedOut || System.nanoTime() - deadline >= 0) {
                return;
            }
            LockSupport.parkNanos(this, ACK_WAIT_STEP_NANOS);
        }
    }

    /**
     * The final commit failed because the group is rebalancing ({@code RebalanceInProgressException}; a
     * {@code CommitFailedException}, whose generation is gone, is not retried) (a member joined while this one closes: under
     * {@code CooperativeStickyAssignor} the rebalance needs this member's polls to complete). As Kafka's error says:
     * poll, with every partition paused, so the rebalance completes (a revocation in it commits what it takes, the
     * ledgers being still here), then commit what is left; a few rounds, within the deadline, keeping time for the
     * consumer's close. Without it the records acknowledged since the last commit went to the next owner again.
     * Poll thread, in {@link #finish}.
     */
    private void completeRebalanceAndCommit(long deadline) {
        for (int round = 0; round < FINAL_COMMIT_ROUNDS && rebalancing && !movedOffsets(ledgers.values()).isEmpty();
                round++) {
            if (deadline - System.nanoTime() < FINISH_RESERVE_NANOS / 5) {
                return; // keep time for the consumer's close
            }
            try {
                consumer.pause(consumer.assignment());
                consumer.poll(REBALANCE_POLL); // records a new assignment fetches are not delivered
                consumer.pause(consumer.assignment());
            } catch (WakeupException e) {
                // the close's own wake-up, if no poll met it yet
            }
            rethrowCallbackFailure(); // a revocation commit that failed in that poll
            commitAcknowledged(new ArrayList<>(ledgers.values()), remaining(deadline));
        }
    }

    private void finish(Throwable failure) {
        state.compareAndSet(RUNNING, STOPPING); // a close() from now on only waits for us
        Throwable cause = failure;
        final CloseRequest request = closeRequest.get();
        final boolean closing = failure == null && request != null;
        final boolean halted = request != null && request.halted;
        final long deadline = closing ? request.deadline : System.nanoTime() + FATAL_FINISH.toNanos();
        try {
            if (!halted) {
                if (closing && !ring.isClosed() && !closerAcknowledges(request.closer)) {
                    awaitHandedOutAcknowledged(request.ackDeadline);
                }
                try {
                    commitAcknowledged(ledgers.values(), remaining(deadline));
                    completeRebalanceAndCommit(deadline);
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, () -> "receiver " + label + ": the final commit failed", e);
                    if (cause == null) {
                        cause = e;
                    } else {
                        cause.addSuppressed(e);
                    }
                }
            }
            for (PartitionAcks ledger : ledgers.values()) {
                ledger.revoke();
            }
            ledgers.clear();
            pending.clear();
            try {
                // leave the group, as the docs say, static members (group.instance.id) too: their default is to stay
                consumer.close(CloseOptions.timeout(remaining(deadline))
                        .withGroupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
            } catch (RuntimeException e) {
                if (cause == null) {
                    cause = e;
                } else {
                    cause.addSuppressed(e);
                }
            }
            final RuntimeException late = callbackFailure; // e.g. a revocation commit inside consumer.close()
            callbackFailure = null;
            if (late != null && late != cause) {
                if (cause == null) {
                    cause = late;
                } else {
                    cause.addSuppressed(late);
                }
            }
        } finally {
            endRoomWait();
            takeBanked();
            if (permits > 0) {
                ring.releaseReserved(permits);
                permits = 0;
            }
            paused = false;
            oldestUnacknowledgedNanos = 0L;
            partitionsAtBound = 0;
            stats = new KafkaReceiverStats(groupId, topicsLabel, 0, 0, 0, 0L, 0L, -1L, commits, failedCommits,
                    commitNanos, failedCommitNanos, lastCommitNanos); // nothing assigned any more
            state.set(CLOSED);
            if (cause == null) {
                mailbox.close();
            } else {
                mailbox.closeExceptionally(cause);
            }
            returnBanked(); // a wake-up that reserved before the close and banked after our take
            terminated.countDown();
            failConsumerTasks();
            closed.complete(null);
            LOG.log(Level.INFO, "receiver {0}: closed{1}", label, cause == null ? "" : " after " + cause);
        }
    }

    /** @return the time left until {@code deadline}, at least {@link #FINISH_FLOOR} */
    private static Duration remaining(long deadline) {
        return Duration.ofNanos(Math.max(deadline - System.nanoTime(), FINISH_FLOOR.toNanos()));
    }

    /**
     * @return whether the thread that called close acknowledged records of a ledger that is still open: the
     *         acknowledgements it would make cannot come while it waits for the close
     */
    private boolean closerAcknowledges(Thread closer) {
        if (closer == null) {
            return false;
        }
        for (PartitionAcks ledger : ledgers.values()) {
            if (ledger.lastAcknowledger() == closer && !ledger.allAcknowledged()) {
                return true;
            }
        }
        return false;
    }

    /** Runs inside {@code poll}, on the poll thread. */
    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
                LOG.log(Level.INFO, "receiver {0}: assigned {1}", label, partitions);
            }
            for (TopicPartition partition : partitions) {
                newLedger(partition); // an old ledger (a reassignment we did not see revoked) ends
            }
            callUser(onAssigned, partitions); // e.g. a seek: the new ledgers are empty, so any position is fine
            if (paused && !partitions.isEmpty()) {
                consumer.pause(partitions); // no records past our reservations: paused like the others
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            final List<PartitionAcks> revoked = new ArrayList<>(partitions.size());
            for (TopicPartition partition : partitions) {
                final PartitionAcks ledger = ledgers.get(partition);
                if (ledger != null) {
                    revoked.add(ledger);
                }
            }
            if (!partitions.isEmpty()) {
                LOG.log(Level.INFO, "receiver {0}: revoked {1}", label, partitions);
            }
            if (!revoked.isEmpty() && !isHalted()) {
                awaitAcknowledged(revoked, System.nanoTime() + revocationTimeoutNanos);
                try {
                    commitAcknowledged(revoked, REVOCATION_COMMIT_TIMEOUT);
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, () -> "receiver " + label + ": the commit on revocation failed", e);
                    if (callbackFailure == null) {
                        callbackFailure = e; // fatal: rethrown once poll returns
                    }
                }
            }
            endAssignment(partitions);
            callUser(onRevoked, partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            LOG.log(Level.WARNING, "receiver {0}: lost {1} (no commit: another member may own them already)", label,
                    partitions);
            endAssignment(partitions); // another member may own them already: commit nothing
            // N11: to onLost if given; else to onRevoked, as Kafka's own default onPartitionsLost does
            callUser(onLost != null ? onLost : onRevoked, partitions);
        }

        /** A user listener's failure is fatal, rethrown once the poll returns. */
        private void callUser(BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
                ? super Collection<TopicPartition>> listener, Collection<TopicPartition> partitions) {
            if (listener == null || partitions.isEmpty()) {
                return;
            }
            try {
                listener.accept(consumer, partitions);
            } catch (WakeupException e) {
                if (state.get() == RUNNING) {
                    if (callbackFailure == null) {
                        callbackFailure = e; // not ours: someone else woke the consumer
                    }
                } else {
                    // N5: our close's wake-up, met by the listener's own consumer call: a wake-up, not a failure
                    LOG.log(Level.DEBUG, "receiver {0}: a listener met the close's wake-up", label);
                }
            } catch (RuntimeException e) {
                if (callbackFailure == null) {
                    callbackFailure = e;
                }
            }
        }

        private void endAssignment(Collection<TopicPartition> partitions) {
            for (TopicPartition partition : partitions) {
                atBound.remove(partition);
                warned.remove(partition);
                final PartitionAcks ledger = ledgers.remove(partition);
                if (ledger != null) {
                    ledger.revoke();
                }
            }
        }
    }

    /** @return whether the receiver is being halted ({@link #halt()}): no waiting, no commits */
    private boolean isHalted() {
        final CloseRequest request = closeRequest.get();
        return request != null && request.halted;
    }

    /** The first close's parameters, immutable: see {@link #closeRequest}. */
    private static final class CloseRequest {
        /** The close's deadline ({@code System.nanoTime()}). */
        final long deadline;
        /** The end of the wait for acknowledgements: the deadline less what the commit and close keep. */
        final long ackDeadline;
        /** The thread that called close: the poll thread does not wait for acks this thread would make. */
        final Thread closer;
        /** A {@link #halt()}: stop without waiting and without a final commit. */
        final boolean halted;

        CloseRequest(long timeoutNanos, boolean halted) {
            final long now = System.nanoTime();
            this.deadline = now + timeoutNanos;
            this.ackDeadline = now + timeoutNanos - Math.min(timeoutNanos / 2, FINISH_RESERVE_NANOS);
            this.closer = Thread.currentThread();
            this.halted = halted;
        }
    }

    /** Records of one partition polled but not yet sent (only when a poll overshoots the room). */
    private static final class PendingRun<K, V> {
        final PartitionAcks ledger;
        final List<ConsumerRecord<K, V>> records;
        /** The consumer's position after these records ({@code ConsumerRecords.nextOffsets()}), or null. */
        final OffsetAndMetadata nextOffset;
        int next;

        PendingRun(PartitionAcks ledger, List<ConsumerRecord<K, V>> records, OffsetAndMetadata nextOffset) {
            this.ledger = ledger;
            this.records = records;
            this.nextOffset = nextOffset;
        }
    }

    /** @return room wake-ups that unparked the poll thread (tests) */
    long roomWakeups() {
        return roomWakeups.get();
    }

    /** @return room wake-ups that found less than a poll's worth and left the poll thread parked (tests) */
    long roomDeclined() {
        return roomDeclined.get();
    }

    /** @return whether the poll thread has a live registration for room (tests) */
    boolean awaitingRoomNow() {
        final RoomWait w = roomWait;
        return w != null && w.live;
    }

    /** @return {@code max.poll.records} as the consumer got it (tests) */
    int maxPollRecords() {
        return settings.maxPollRecords;
    }

    private String stateName() {
        return state.get().toString();
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 2;
        }
    }

    @Override
    public String toString() {
        return "KafkaMailboxReceiver{topics=" + topics + ", state=" + stateName() + ", paused=" + paused
                + ", mailbox=" + mailbox + "}";
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
         * their first records are fetched: the place to {@code seek} (reactor-kafka's {@code addAssignListener}
         * and {@code seek} on assignment).
         * <p><b>WARNING:</b> runs inside {@code poll} on the poll thread: keep it short. If it throws, the receiver
         * fails with what it threw.
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
         * <p><b>WARNING:</b> runs inside {@code poll} on the poll thread: keep it short (it delays the group's
         * rebalance). If it throws, the receiver fails with what it threw.
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
         * <p><b>WARNING:</b> runs inside {@code poll} on the poll thread: keep it short. If it throws, the receiver
         * fails with what it threw.
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
         * {@link RecordDeserializationException} after the records before it.
         * <p><b>WARNING:</b> {@code handler} runs on the poll thread: it must not block for long. If it throws,
         * the receiver fails with what it threw.
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
         * acknowledged or not (reactor-kafka's {@code maxDeferredCommits}). Before each poll the poll thread reads it
         * in O(1) and pauses a partition at the bound, and resumes it once acknowledgements move the oldest
         * unacknowledged record on. A partition under the bound may get one poll's records more
         * ({@code max.poll.records}), so at most {@code perPartition + max.poll.records - 1} records are delivered
         * past the oldest unacknowledged one, and one record never acknowledged stops its partition there.
         * <p>This is what bounds memory when the consumer hands records on (to an executor, a {@code flatMap}) and
         * takes them from the mailbox as fast as they come, and what turns a record dropped without an
         * acknowledgement into a visible stall instead of unbounded work (see
         * {@link KafkaMailboxReceiver#oldestUnacknowledgedAge()}). Lower means less work redone after a crash or
         * rebalance and less memory, but less parallelism across the records of one partition.
         *
         * @param perPartition the bound, {@code >= 1}; default {@value KafkaMailboxReceiver#DEFAULT_MAX_UNACKNOWLEDGED}
         * @return this
         */
        public Builder<K, V> maxUnacknowledged(int perPartition) {
            this.maxUnacknowledged = ReceiverSettings.checkMaxUnacknowledged(perPartition);
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

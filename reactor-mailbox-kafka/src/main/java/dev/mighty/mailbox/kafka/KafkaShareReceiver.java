package dev.mighty.mailbox.kafka;

import static dev.mighty.mailbox.kafka.ReceiverState.CLOSED;
import static dev.mighty.mailbox.kafka.ReceiverState.NEW;
import static dev.mighty.mailbox.kafka.ReceiverState.RUNNING;
import static dev.mighty.mailbox.kafka.ReceiverState.STOPPING;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.Deserializer;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;

/**
 * A member of a Kafka share group (KIP-932, "queues for Kafka") that delivers its records into a bounded
 * {@link Mailbox}: the records of a partition are shared by all the group's consumers, each record is locked to one
 * consumer while it is processed, and each is settled on its own ({@link ReceivedShareRecord#accept()},
 * {@code release()}, {@code reject()}, {@code renew()}). With reactor-core on the class path, {@link #receive()} is
 * the one-call face:
 * <pre>{@code
 * KafkaShareReceiver<String, String> receiver = KafkaShareReceiver.<String, String>builder(consumerConfig)
 *         .groupId("workers")
 *         .topics(List.of("jobs"))
 *         .build();
 * Disposable d = receiver.receive()                      // starts on subscribe; onNext off the poll thread
 *         .flatMap(r -> work(r.value()).doOnSuccess(x -> r.accept()).doOnError(e -> r.release()), 16)
 *         .subscribe();
 * }</pre>
 *
 * <h2>Guarantees</h2>
 * At least once, per record: a record not accepted or rejected is delivered again (to any consumer of the group)
 * after a release, after its acquisition lock expires ({@code share.record.lock.duration.ms}, 30 s by default), or
 * when this receiver closes; {@link ReceivedShareRecord#deliveryCount()} says which delivery it is, and the broker
 * stops at the group's {@code share.delivery.count.limit}. No ordering (see {@link ReceivedShareRecord}). An
 * acknowledgement is a request that the broker refuses once the record's lock has expired.
 *
 * <h2>Backpressure and the memory bound</h2>
 * One thread (the <em>poll thread</em>, started by {@link #start()}) owns the {@code KafkaShareConsumer}, in explicit
 * acknowledgement mode ({@code share.acknowledgement.mode=explicit}, set by the receiver). It polls only when
 * <ol>
 *   <li>every record of the previous poll has been acknowledged (an outcome, or a renewal), as the explicit mode
 *       requires (the consumer's {@code poll} throws otherwise); and</li>
 *   <li>it holds mailbox reservations for a whole poll ({@code max.poll.records} slots, which the receiver sets to
 *       {@code min(500, capacity)} unless the configuration sets it, at most {@code capacity}), so a poll's records
 *       always fit and the poll thread never waits on a full mailbox.</li>
 * </ol>
 * So the records outstanding (in the mailbox, in the application's hands, or being renewed) are at most one poll's
 * records, and a stalled consumer of the mailbox stops the polls altogether. The receiver also sets
 * {@code share.acquire.mode=record_limit}, so that the broker acquires (locks) no more records for this consumer than
 * a poll returns; records acquired and left in the consumer's buffer would lose their locks while they wait. The
 * share consumer needs no poll for liveness (its heartbeats run on its own thread), so the poll thread parks while
 * it waits.
 * <p>The wait for room is a {@code RoomTicket} registration with the mailbox (see the poll loop's comment): the
 * thread that frees a slot wakes the poll thread, which reserves what is free, registers again if that is not a
 * poll's worth, and withdraws the registration once it has a poll's worth or stops.
 *
 * <h2>Acknowledgements</h2>
 * An outcome or renewal request may come from any thread; it is queued and applied by the poll thread with the
 * consumer's {@code acknowledge(record, type)}, then sent to the broker with the next poll, or with a
 * {@code commitAsync} when no poll is due: at once for a renewal, and at least every {@code pollTimeout} for the
 * other acknowledgements while the poll thread waits for the rest of a poll's records.
 *
 * <h2>Renewals</h2>
 * A renewal is sent as soon as the poll thread sees it (no poll needed). With kafka-clients 4.4 the share consumer
 * then takes the record out of its current fetch and hands it back with a later poll, once the broker has answered;
 * until then it cannot be acknowledged, and the consumer fetches no new records while a renewal is outstanding.
 * The receiver hides this: a record handed back is not delivered again (the application holds it), its next request
 * (an outcome, or another renewal) is applied then, and the poll thread polls for it as soon as there is such a
 * request. The cost: a record that is being renewed holds up this consumer's fetches until it is settled.
 *
 * <h2>Close</h2>
 * {@link #close(Duration)} stops polling, releases every record delivered and not settled (in the mailbox or in the
 * application's hands: their {@code accept()} returns false from then on), hands the outcomes already given to the
 * consumer, commits them ({@code commitSync}), closes the consumer (leaving the group; the broker releases a record
 * whose renewal was in flight) and closes the mailbox (the stream completes once it is drained; {@link #receive()}
 * skips the released records). One deadline bounds it all.
 *
 * <h2>Errors</h2>
 * A fatal error on the poll thread (a poll that throws, a record that cannot be deserialized, an authorization
 * error) releases what it can, commits, closes the consumer and closes the mailbox exceptionally with the error: the
 * consumer face sees it after draining ({@code onError}, or {@code MailboxClosedException} from {@code recv}).
 *
 * <h2>Threads</h2>
 * Every public method may be called from any thread; everything that touches the share consumer runs on the poll
 * thread. The mailbox has one consumer at a time; only the receiver sends into it.
 * <p><b>Note:</b> as with {@link KafkaMailboxReceiver}, a subscriber of the mailbox without its own thread (no
 * {@code publishOn}) may run on the poll thread; {@link #receive()} always delivers on a thread of its own.
 *
 * <h2>Progress</h2>
 * {@link #stats()} is wait-free; the {@link ReceivedShareRecord} requests are lock-free; {@link #close(Duration)}
 * blocks, bounded by its timeout (plus 1 s); {@link #closeAsync(Duration)} does not block.
 *
 * <h2>Visibility</h2>
 * What the poll thread did before sending a record happens-before the mailbox consumer's receipt of it; what a
 * thread did before settling a record happens-before the poll thread hands the outcome to the consumer; closing
 * happens-before the end of stream of the mailbox.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class KafkaShareReceiver<K, V> implements AutoCloseable {
    /** The default of {@link Builder#capacity}. */
    public static final int DEFAULT_CAPACITY = 1024;
    /** The default of {@link Builder#pollTimeout}. */
    public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(100);
    /** The default of {@link Builder#closeTimeout}: the timeout of {@link #close()} and of {@link #receive()}'s close. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);
    /** What a closer waits for the poll thread beyond its timeout (the consumer's close may overrun by that much). */
    static final Duration CLOSE_GRACE = Duration.ofSeconds(1);

    private static final Logger LOG = System.getLogger(KafkaShareReceiver.class.getName());

    private final String label;
    private final Duration closeTimeout;
    private final Mailbox<ReceivedShareRecord<K, V>> mailbox;
    private final SharePollLoop<K, V> loop;
    private final Thread pollThread;
    private final AtomicReference<ReceiverState> state = new AtomicReference<>(NEW);
    /** The first close's deadline, set once by CAS before that close moves the state to STOPPING. */
    private final AtomicReference<Long> closeDeadline = new AtomicReference<>();
    private final AtomicBoolean receiveClaimed = new AtomicBoolean();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final CountDownLatch terminated = new CountDownLatch(1);
    private final String topicsLabel;

    private KafkaShareReceiver(Builder<K, V> b, Map<String, Object> config, int maxPollRecords) {
        this.topicsLabel = String.join(",", b.topics);
        final String groupId = String.valueOf(config.get(ConsumerConfig.GROUP_ID_CONFIG));
        this.label = "[group " + groupId + ", topics " + topicsLabel + "]";
        this.closeTimeout = b.closeTimeout;
        this.mailbox = Mailboxes.<ReceivedShareRecord<K, V>>builder().capacity(b.capacity)
                .name("kafka-share-receiver-" + topicsLabel).build();
        final KafkaShareConsumer<K, V> consumer = b.keyDeserializer == null && b.valueDeserializer == null
                ? new KafkaShareConsumer<>(config)
                : new KafkaShareConsumer<>(config, b.keyDeserializer, b.valueDeserializer);
        this.loop = new SharePollLoop<>(this, consumer, mailbox, b.topics, groupId, topicsLabel, maxPollRecords,
                b.pollTimeout);
        this.pollThread = new Thread(loop, threadName("poll"));
        pollThread.setDaemon(true);
        loop.pollThread(pollThread);
    }

    /**
     * Creates a builder of share receivers.
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param consumerConfig the {@code KafkaShareConsumer} configuration: {@code bootstrap.servers}, {@code group.id}
     *        (or {@link Builder#groupId}) and the deserializers (classes or class names, or
     *        {@link Builder#keyDeserializer} / {@link Builder#valueDeserializer}). The receiver sets
     *        {@code share.acknowledgement.mode=explicit} and {@code share.acquire.mode=record_limit}.
     * @return a builder
     * @throws NullPointerException if {@code consumerConfig} is null
     */
    public static <K, V> Builder<K, V> builder(Map<String, Object> consumerConfig) {
        return new Builder<>(consumerConfig);
    }

    /**
     * The low-level path: the mailbox the records arrive in; consume it with any face, one consumer at a time, and
     * {@link #start()} the receiver yourself. Only the receiver may send into it.
     *
     * @return the mailbox the records arrive in
     */
    public Mailbox<ReceivedShareRecord<K, V>> mailbox() {
        return mailbox;
    }

    /**
     * The records as a {@code Flux} (reactor-core needed on the class path for this method only). Subscribing starts
     * the receiver; records are delivered on a single-threaded scheduler of this stream's own (a daemon thread
     * named {@code kafka-share-receive-<topics>}, disposed when the stream ends), never on the poll thread, through
     * the fused {@code MailboxFlux} and {@code publishOn}, so a slow downstream stops the polls and nothing is
     * buffered outside the mailbox. Records released by the close while they waited in the mailbox are skipped.
     * <p>A cancel, an error or a completion downstream closes the receiver without blocking the signalling thread
     * ({@link #closeAsync(Duration)} with {@link Builder#closeTimeout}): what is not settled is released for the
     * group's other consumers. The stream completes when the receiver closes and errors with a fatal poll error.
     * One {@code receive()} subscription per receiver, and not next to {@link #start()}: otherwise
     * {@code onError(IllegalStateException)}.
     *
     * @return a cold {@code Flux} of the records; settle each ({@link ReceivedShareRecord#accept()}, ...)
     */
    public Flux<ReceivedShareRecord<K, V>> receive() {
        return ShareReactorReceive.receive(this, null, true);
    }

    /**
     * As {@link #receive()}, delivering on {@code scheduler} instead (not disposed by the stream).
     *
     * @param scheduler where the downstream's {@code onNext} runs; not {@code Schedulers.immediate()} if the
     *        downstream is slow (it would run on the poll thread)
     * @return a cold {@code Flux} of the records
     */
    public Flux<ReceivedShareRecord<K, V>> receive(Scheduler scheduler) {
        return ShareReactorReceive.receive(this, Objects.requireNonNull(scheduler, "scheduler"), false);
    }

    /** @return null if this is the first receive() and the receiver is new, else the refusal */
    IllegalStateException claimReceive() {
        if (!receiveClaimed.compareAndSet(false, true)) {
            return new IllegalStateException("receive() subscribed twice: one receive() subscription per receiver");
        }
        if (state.get() != NEW) {
            return new IllegalStateException("receive() on a receiver already started or closed: state="
                    + state.get());
        }
        return null;
    }

    Duration closeTimeout() {
        return closeTimeout;
    }

    String threadName(String role) {
        return "kafka-share-" + role + "-" + topicsLabel;
    }

    /**
     * Starts the poll thread: it subscribes to the topics and begins to poll. Any thread, once.
     *
     * @throws IllegalStateException if started before, or closed
     */
    public void start() {
        if (!state.compareAndSet(NEW, RUNNING)) {
            throw new IllegalStateException("share receiver already started or closed: state=" + state.get());
        }
        try {
            pollThread.start();
        } catch (Throwable t) {
            state.set(CLOSED); // no poll thread will ever run: end here, as a close before start does
            loop.closeUnstarted(t);
            terminated();
            throw t;
        }
    }

    /**
     * The receiver's figures (polls, records delivered and outstanding, acknowledgements by type, failures). Any
     * thread; wait-free.
     *
     * @return the last snapshot, made by the poll thread at the end of its last turn
     */
    public KafkaShareReceiverStats stats() {
        return loop.stats();
    }

    /** As {@link #close(Duration)} with {@link Builder#closeTimeout}. */
    @Override
    public void close() {
        close(closeTimeout);
    }

    /**
     * Stops polling, releases every record delivered and not settled, commits the acknowledgements, closes the
     * consumer (leaving the group) and closes the mailbox (see "Close" in the class comment). One deadline,
     * {@code timeout} from now, bounds the commit and the consumer's close; this call returns when the receiver is
     * closed, or at the deadline plus 1 s if the poll thread has not finished (it runs user code that does not
     * return, e.g. a subscriber on the poll thread): the close then completes in the background ({@link #closeAsync}
     * tells when). An interrupt ends the wait early (the flag is kept). Idempotent, and safe from several threads at
     * once (the first close's deadline counts; the others wait for it, each bounded by its own timeout); harmless
     * before {@link #start()}. Called on the poll thread (subscriber code run by a send), it does not wait: the poll
     * thread stops when that code returns.
     *
     * @param timeout the bound of the close, {@code >= 0}
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public void close(Duration timeout) {
        checkTimeout(timeout);
        stop(timeout);
        if (Thread.currentThread() == pollThread) {
            return; // user code on the poll thread: the loop stops when it returns
        }
        try {
            if (!terminated.await(saturatedNanos(timeout) + CLOSE_GRACE.toNanos(), TimeUnit.NANOSECONDS)) {
                LOG.log(Level.WARNING, "share receiver {0}: close({1}) returns before the poll thread finished; the"
                        + " close completes in the background", label, timeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the close completes in the background
        }
    }

    /**
     * Starts the close of {@link #close(Duration)} and returns at once.
     *
     * @param timeout the bound of the close, {@code >= 0}
     * @return a stage completed (normally, whatever the receiver's end was) once the consumer and the mailbox are
     *         closed
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    public CompletionStage<Void> closeAsync(Duration timeout) {
        checkTimeout(timeout);
        stop(timeout);
        return closed.copy();
    }

    private static void checkTimeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
    }

    private void stop(Duration timeout) {
        for (;;) {
            final ReceiverState s = state.get();
            if (s == NEW) {
                if (state.compareAndSet(NEW, CLOSED)) {
                    loop.closeUnstarted(null);
                    terminated();
                    return;
                }
            } else if (s == RUNNING) {
                // the first close decides: its deadline is published before the state moves (a CAS, read by the
                // poll thread after it sees STOPPING)
                if (closeDeadline.compareAndSet(null, System.nanoTime() + saturatedNanos(timeout))) {
                    state.compareAndSet(RUNNING, STOPPING); // fails only if the poll thread is stopping by itself
                    loop.wakeUp();
                }
                return;
            } else {
                return; // stopping or closed already
            }
        }
    }

    // ------------------------------------------------------------------ the poll loop's side

    /** {@return whether the poll thread should go on}: RUNNING, no close requested */
    boolean isRunning() {
        return state.get() == RUNNING;
    }

    /**
     * Poll thread, as it finishes: moves RUNNING to STOPPING (a close from now on only waits).
     *
     * @return the close's deadline ({@code System.nanoTime()}), or null when no close was requested (a failure, or
     *         the mailbox closed by someone else)
     */
    Long stopping() {
        state.compareAndSet(RUNNING, STOPPING);
        return closeDeadline.get();
    }

    /** Poll thread, last: the receiver is closed. */
    void terminated() {
        state.set(CLOSED);
        terminated.countDown();
        closed.complete(null);
    }

    String label() {
        return label;
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE / 4;
        }
    }

    @Override
    public String toString() {
        return "KafkaShareReceiver{" + label + ", state=" + state.get() + ", mailbox=" + mailbox + "}";
    }

    /**
     * Configures a {@link KafkaShareReceiver}. Not thread-safe; {@link #build()} checks the settings and creates the
     * {@code KafkaShareConsumer} (so a bad consumer configuration fails there) but starts nothing.
     *
     * @param <K> the key type
     * @param <V> the value type
     */
    public static final class Builder<K, V> {
        private final Map<String, Object> config;
        private List<String> topics;
        private String groupId;
        private int capacity = DEFAULT_CAPACITY;
        private Duration pollTimeout = DEFAULT_POLL_TIMEOUT;
        private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
        private Deserializer<K> keyDeserializer;
        private Deserializer<V> valueDeserializer;

        Builder(Map<String, Object> config) {
            this.config = new HashMap<>(Objects.requireNonNull(config, "consumerConfig"));
        }

        /**
         * The share group to join; overrides the configuration's {@code group.id}.
         *
         * @param groupId the group id, not blank
         * @return this
         */
        public Builder<K, V> groupId(String groupId) {
            Objects.requireNonNull(groupId, "groupId");
            if (groupId.isBlank()) {
                throw new IllegalArgumentException("groupId: \"" + groupId + "\" (expected: not blank)");
            }
            this.groupId = groupId;
            return this;
        }

        /**
         * Subscribes to these topics.
         *
         * @param topics the topics; required, not empty, no null or blank name
         * @return this
         */
        public Builder<K, V> topics(List<String> topics) {
            this.topics = ShareSettings.checkTopics(topics);
            return this;
        }

        /**
         * The capacity of the mailbox between the poll thread and the consumer (rounded up to a power of two).
         *
         * @param capacity 1 .. 2^30; default {@value KafkaShareReceiver#DEFAULT_CAPACITY}
         * @return this
         */
        public Builder<K, V> capacity(int capacity) {
            this.capacity = ShareSettings.checkCapacity(capacity);
            return this;
        }

        /**
         * The timeout of each poll, and the longest the poll thread keeps acknowledgements it applied before it
         * sends them when no poll is due.
         *
         * @param pollTimeout {@code > 0}; default 100 ms
         * @return this
         */
        public Builder<K, V> pollTimeout(Duration pollTimeout) {
            this.pollTimeout = ShareSettings.checkPositive("pollTimeout", pollTimeout);
            return this;
        }

        /**
         * The timeout of {@link KafkaShareReceiver#close()} and of the close that ends {@code receive()}.
         *
         * @param closeTimeout {@code >= 0}; default 30 s
         * @return this
         */
        public Builder<K, V> closeTimeout(Duration closeTimeout) {
            this.closeTimeout = ShareSettings.checkNotNegative("closeTimeout", closeTimeout);
            return this;
        }

        /**
         * The key deserializer instance (instead of the configuration's class); the consumer closes it.
         *
         * @param deserializer the key deserializer
         * @return this
         */
        public Builder<K, V> keyDeserializer(Deserializer<K> deserializer) {
            this.keyDeserializer = Objects.requireNonNull(deserializer, "keyDeserializer");
            return this;
        }

        /**
         * The value deserializer instance (instead of the configuration's class); the consumer closes it.
         *
         * @param deserializer the value deserializer
         * @return this
         */
        public Builder<K, V> valueDeserializer(Deserializer<V> deserializer) {
            this.valueDeserializer = Objects.requireNonNull(deserializer, "valueDeserializer");
            return this;
        }

        /**
         * Checks the settings and creates the receiver and its consumer; nothing runs until
         * {@link KafkaShareReceiver#start()} (or {@code receive()}'s subscription).
         *
         * @return a new receiver
         * @throws IllegalStateException if no topics were given
         * @throws IllegalArgumentException if the configuration contradicts the receiver (no group id, implicit
         *         acknowledgement, {@code batch_optimized} acquisition, {@code max.poll.records} over the capacity,
         *         one deserializer instance given without the other and without a configured class)
         */
        public KafkaShareReceiver<K, V> build() {
            if (topics == null) {
                throw new IllegalStateException("topics not set (expected: topics(List.of(...)))");
            }
            final Map<String, Object> checked = ShareSettings.consumerConfig(config, groupId, capacity,
                    keyDeserializer != null, valueDeserializer != null);
            final int maxPollRecords = (Integer) checked.get(ConsumerConfig.MAX_POLL_RECORDS_CONFIG);
            return new KafkaShareReceiver<>(this, checked, maxPollRecords);
        }
    }
}

package dev.mighty.mailbox.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * Sends the records of a {@link Publisher} to Kafka through one {@link KafkaProducer}, with a bound on the sends
 * in flight, and publishes one {@link Result} per record.
 * <pre>{@code
 * try (KafkaMailboxSender<String, String> sender = KafkaMailboxSender.<String, String>builder(producerConfig)
 *         .maxInFlight(256).build()) {
 *     Flux.from(sender.send(records))                 // records: a Publisher<ProducerRecord<String, String>>
 *         .doOnNext(r -> log(r.metadata()))
 *         .blockLast();                               // a failed send ends the stream: stopOnError(true)
 * }                                                    // close(): sends what it can within its timeout, closes
 * }</pre>
 * {@link #sendCorrelated} does the same for records paired with a value of the caller's (reactor-kafka's
 * {@code SenderRecord} correlation metadata), which comes back with the record's result.
 *
 * <h2>The in-flight bound and the result order</h2>
 * Each {@link #send} subscription has a mailbox of {@code maxInFlight} result slots (rounded up to a power of
 * two). A record is requested from the upstream only once a slot is reserved for its result, so the records
 * handed to the producer whose results have not been taken by the downstream are at most {@code maxInFlight}:
 * a slow downstream slows the upstream, and nothing is buffered without bound. Results are published <b>in
 * order of completion</b>: the order of the producer's callbacks, which Kafka runs in send order for the records
 * of one partition; across partitions the order is that of the broker's acknowledgements.
 *
 * <h2>Failed sends: {@link Builder#stopOnError}</h2>
 * A send fails with the exception Kafka reports in the send's callback, or one {@code KafkaProducer.send} throws
 * itself (a closed producer, an interrupted wait).
 * <ul>
 *     <li>{@code stopOnError(true)} (the default): the first failure stops the subscription. No record is handed
 *     to the producer after it (records the upstream delivers later are dropped) and the upstream is cancelled;
 *     the sends already in flight complete, their successful results are published, and then the stream ends
 *     with {@code onError} carrying the first failure's exception (the failed records get no result). So every
 *     result such a stream publishes is a success, and what it published before the error is exactly what Kafka
 *     acknowledged.</li>
 *     <li>{@code stopOnError(false)}: every record gets exactly one result, its {@link RecordMetadata} or its
 *     exception ({@link Result#isSuccess()} tells which), and sending goes on; the stream completes normally when
 *     the upstream does.</li>
 * </ul>
 *
 * <h2>Termination</h2>
 * When the upstream completes, the results stream completes once every send has completed and its result was
 * taken; when the upstream fails, it fails with that error after the results of the sends in flight. A downstream
 * cancel cancels the upstream; records already handed to the producer are still sent (Kafka cannot take them
 * back), their results are dropped.
 *
 * <h2>Threads</h2>
 * {@link #send} and {@link #close} may be called from any thread. The producer's callbacks only put results
 * into the mailbox (lock-free, never blocking Kafka's I/O thread); the downstream's {@code onNext} runs on the
 * <em>result executor</em>: the sender's own daemon thread unless {@link Builder#resultExecutor} gave one. The
 * upstream is asked for more records when the downstream frees room, so on that executor too (and at first on the
 * subscribing thread): {@code KafkaProducer.send} runs on the thread that delivers the upstream's {@code onNext}
 * and may block there as Kafka does (for metadata, or while its {@code buffer.memory} is full, up to
 * {@code max.block.ms}), never on the producer's I/O thread, where blocking would deadlock it. The cancel of a
 * {@code stopOnError} stop is made by the thread that saw the failure: Kafka's I/O thread for a failure the broker
 * reported, the sending thread for one {@code KafkaProducer.send} reported at once.
 * <p>Throughput needs enough sends in flight to cover the round trip: {@code maxInFlight} of about
 * {@code records/s × round-trip time} (with {@code linger.ms} counted in the round trip).
 *
 * <h2>Visibility</h2>
 * The producer's completion of a send happens-before the downstream's receipt of its result (and, for a
 * {@code stopOnError} stop, of the {@code onError}).
 *
 * <h2>Spec rules</h2>
 * The returned publisher follows Reactive Streams 1.0.4: the downstream side is a {@link MailboxPublisher}
 * (it passes the TCK); the upstream side requests only what it reserved (§2.1, §3.17) and makes its
 * {@code request}/{@code cancel} calls serially (§2.7).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
public final class KafkaMailboxSender<K, V> implements AutoCloseable {
    /** The default of {@link Builder#maxInFlight}. */
    public static final int DEFAULT_MAX_IN_FLIGHT = 256;
    /** The default of {@link Builder#stopOnError}, as in reactor-kafka. */
    public static final boolean DEFAULT_STOP_ON_ERROR = true;
    /** The timeout of {@link #close()}: the bound of the whole close. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final KafkaProducer<K, V> producer;
    private final int maxInFlight;
    /** Built with a {@code transactional.id}: its producer's transactions are initialised. */
    private final boolean transactional;
    private final boolean stopOnError;
    private final Executor resultExecutor;
    private static final AtomicInteger SENDERS = new AtomicInteger();

    /** The sender's own result thread when no executor was given; shut down by {@link #close}. */
    private final ExecutorService ownExecutor;

    private KafkaMailboxSender(Builder<K, V> builder) {
        this.producer = new KafkaProducer<>(new HashMap<>(builder.config));
        this.transactional = builder.config.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG) != null;
        if (transactional) {
            try {
                producer.initTransactions(); // fences an older producer of the same transactional.id
            } catch (RuntimeException e) {
                producer.close(Duration.ZERO);
                throw e;
            }
        }
        this.maxInFlight = builder.maxInFlight;
        this.stopOnError = builder.stopOnError;
        if (builder.resultExecutor == null) {
            final int id = SENDERS.incrementAndGet();
            this.ownExecutor = Executors.newSingleThreadExecutor(task -> {
                final Thread thread = new Thread(task, "kafka-mailbox-sender-results-" + id);
                thread.setDaemon(true);
                return thread;
            });
            this.resultExecutor = ownExecutor;
        } else {
            this.ownExecutor = null;
            this.resultExecutor = builder.resultExecutor;
        }
    }

    /**
     * Creates a builder of senders.
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param producerConfig the {@code KafkaProducer} configuration: {@code bootstrap.servers} and the key and
     *        value serializers (classes or class names)
     * @return a builder
     * @throws NullPointerException if {@code producerConfig} is null
     */
    public static <K, V> Builder<K, V> builder(Map<String, Object> producerConfig) {
        return new Builder<>(producerConfig);
    }

    /**
     * Sends records and publishes their results.
     *
     * @param records the records to send; subscribed once per subscription to the returned publisher
     * @return a cold publisher: each subscription sends {@code records} and publishes their results in order of
     *         completion (failures as the builder's {@link Builder#stopOnError} says)
     * @throws NullPointerException if {@code records} is null
     */
    public Publisher<Result<K, V>> send(Publisher<? extends ProducerRecord<K, V>> records) {
        Objects.requireNonNull(records, "records");
        return sendWith(records, Function.identity(), Result::new);
    }

    /**
     * As {@link #send}, for records each paired with a value of the caller's (an id, the message the record was
     * made from, a reply handle) that comes back with the record's result: reactor-kafka's
     * {@code send(Publisher<SenderRecord<K, V, T>>)} and {@code SenderResult.correlationMetadata()}. (A distinct
     * name because the two methods would erase to the same signature.)
     * <pre>{@code
     * Flux<CorrelatedRecord<String, String, Order>> records = orders.map(order ->
     *         CorrelatedRecord.of(new ProducerRecord<>("orders", order.id(), order.json()), order));
     * Flux.from(sender.sendCorrelated(records))
     *         .doOnNext(result -> result.correlation().markSent(result.metadata().offset()))
     *         .blockLast();
     * }</pre>
     *
     * @param <T> the correlation value's type
     * @param records the records and their correlation values; subscribed once per subscription
     * @return a cold publisher as {@link #send}'s, whose results carry the correlation value of their record
     * @throws NullPointerException if {@code records} is null
     */
    public <T> Publisher<CorrelatedResult<K, V, T>> sendCorrelated(
            Publisher<? extends CorrelatedRecord<K, V, T>> records) {
        Objects.requireNonNull(records, "records");
        return sendWith(records, CorrelatedRecord::record,
                (element, metadata, exception) -> new CorrelatedResult<>(element.record(), metadata, exception,
                        element.correlation()));
    }

    private <E, R extends Result<K, V>> Publisher<R> sendWith(Publisher<? extends E> records,
            Function<? super E, ProducerRecord<K, V>> recordOf, SendSubscriber.ResultOf<E, R> resultOf) {
        return downstream -> {
            Objects.requireNonNull(downstream, "downstream"); // §1.9
            final Mailbox<R> results = Mailboxes.bounded(maxInFlight);
            final SendSubscriber<K, V, E, R> sends =
                    new SendSubscriber<>(producer, results, recordOf, resultOf, stopOnError);
            final MailboxPublisher<R> out =
                    new MailboxPublisher<>(results, MailboxPublisher.DEFAULT_BATCH_SIZE, resultExecutor);
            out.subscribe(new SendSubscriber.CancelRelay<>(downstream, sends, results));
            records.subscribe(sends);
        };
    }

    /** {@return whether the sender was built with a {@code transactional.id} (its transactions initialised)} */
    public boolean isTransactional() {
        return transactional;
    }

    /** {@return the producer, for what this class does not cover (metrics, partitionsFor); do not close it} */
    public KafkaProducer<K, V> producer() {
        return producer;
    }

    /** As {@link #close(Duration)} with {@link #DEFAULT_CLOSE_TIMEOUT}. */
    @Override
    public void close() {
        close(DEFAULT_CLOSE_TIMEOUT);
    }

    /**
     * Closes the producer, waiting at most {@code timeout} in all: records handed to it are sent and their results
     * published if that takes no longer ({@code KafkaProducer.close(timeout)} flushes within its bound); what is
     * still unsent then fails, and its result says so (the producer's exception). Sends after that fail with the
     * producer's exception, as results. The sender's own result thread (if no executor was given) finishes the
     * deliveries already handed to it and stops: a subscription that still has results to deliver after that ends
     * with {@code onError(RejectedExecutionException)}, so close the sender after its result streams have completed.
     * Idempotent; any thread.
     *
     * @param timeout the bound of the whole close ({@code KafkaProducer.close(timeout)}), {@code >= 0}
     */
    public void close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
        // NOTE: no flush() first: it has no timeout, and with the broker gone it waits for delivery.timeout.ms
        // (2 min by default) before close(timeout) even starts. close(timeout) flushes within its own bound.
        producer.close(timeout);
        if (ownExecutor != null) {
            ownExecutor.shutdown(); // results already handed to it are still delivered
        }
    }

    /**
     * A record and a value of the caller's that {@link #sendCorrelated} hands back with the record's
     * {@link CorrelatedResult}: reactor-kafka's {@code SenderRecord}, as a pair rather than a
     * {@code ProducerRecord} subclass.
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param <T> the correlation value's type
     */
    public static final class CorrelatedRecord<K, V, T> {
        private final ProducerRecord<K, V> record;
        private final @Nullable T correlation;

        private CorrelatedRecord(ProducerRecord<K, V> record, @Nullable T correlation) {
            this.record = record;
            this.correlation = correlation;
        }

        /**
         * Pairs a record with its correlation value.
         *
         * @param <K> the key type
         * @param <V> the value type
         * @param <T> the correlation value's type
         * @param record the record to send
         * @param correlation handed back with the record's result as it is (not sent to Kafka); may be null
         * @return the pair
         * @throws NullPointerException if {@code record} is null
         */
        public static <K, V, T> CorrelatedRecord<K, V, T> of(ProducerRecord<K, V> record,
                @Nullable T correlation) {
            return new CorrelatedRecord<>(Objects.requireNonNull(record, "record"), correlation);
        }

        /** {@return the record to send} */
        public ProducerRecord<K, V> record() {
            return record;
        }

        /** {@return the correlation value, as given (may be null)} */
        public @Nullable T correlation() {
            return correlation;
        }

        @Override
        public String toString() {
            return "CorrelatedRecord{" + record.topic() + ", correlation=" + correlation + "}";
        }
    }

    /**
     * The outcome of one send: the record and either its metadata or the exception that failed it. The results of
     * {@link #sendCorrelated} are {@link CorrelatedResult}s.
     *
     * @param <K> the key type
     * @param <V> the value type
     */
    public static sealed class Result<K, V> permits CorrelatedResult {
        private final ProducerRecord<K, V> record;
        private final @Nullable RecordMetadata metadata;
        private final @Nullable Exception exception;

        Result(ProducerRecord<K, V> record, RecordMetadata metadata, Exception exception) {
            this.record = record;
            this.metadata = metadata;
            this.exception = exception;
        }

        /** {@return the record as it was sent} */
        public final ProducerRecord<K, V> record() {
            return record;
        }

        /** {@return the broker's acknowledgement (partition, offset), or null if the send failed} */
        public final @Nullable RecordMetadata metadata() {
            return metadata;
        }

        /** {@return what failed the send, or null if it succeeded} */
        public final @Nullable Exception exception() {
            return exception;
        }

        /** {@return whether the broker acknowledged the record} */
        public final boolean isSuccess() {
            return exception == null;
        }

        @Override
        public String toString() {
            return "Result{" + describe() + "}";
        }

        final String describe() {
            return record.topic() + (exception == null ? " -> " + metadata : " failed: " + exception);
        }
    }

    /**
     * A {@link Result} of {@link #sendCorrelated}, with the correlation value its record was paired with:
     * reactor-kafka's {@code SenderResult}.
     *
     * @param <K> the key type
     * @param <V> the value type
     * @param <T> the correlation value's type
     */
    public static final class CorrelatedResult<K, V, T> extends Result<K, V> {
        private final @Nullable T correlation;

        CorrelatedResult(ProducerRecord<K, V> record, RecordMetadata metadata, Exception exception, T correlation) {
            super(record, metadata, exception);
            this.correlation = correlation;
        }

        /** {@return the correlation value of the record, as given to {@link CorrelatedRecord#of} (may be null)} */
        public @Nullable T correlation() {
            return correlation;
        }

        @Override
        public String toString() {
            return "CorrelatedResult{" + describe() + ", correlation=" + correlation + "}";
        }
    }

    /**
     * Configures a {@link KafkaMailboxSender}. Not thread-safe.
     *
     * @param <K> the key type
     * @param <V> the value type
     */
    public static final class Builder<K, V> {
        private final Map<String, Object> config;
        private int maxInFlight = DEFAULT_MAX_IN_FLIGHT;
        private boolean stopOnError = DEFAULT_STOP_ON_ERROR;
        private Executor resultExecutor;

        Builder(Map<String, Object> config) {
            this.config = Map.copyOf(Objects.requireNonNull(config, "producerConfig"));
        }

        /**
         * Sets how many records a subscription may have in flight.
         *
         * @param maxInFlight the most records sent and not yet taken as results, per subscription, {@code 1 ..
         *        2^30}, rounded up to a power of two; default {@value KafkaMailboxSender#DEFAULT_MAX_IN_FLIGHT}
         * @return this
         */
        public Builder<K, V> maxInFlight(int maxInFlight) {
            if (maxInFlight < 1 || maxInFlight > MailboxRing.MAX_CAPACITY) {
                throw new IllegalArgumentException("maxInFlight: " + maxInFlight + " (expected: 1 .. "
                        + MailboxRing.MAX_CAPACITY + ")");
            }
            this.maxInFlight = maxInFlight;
            return this;
        }

        /**
         * What a failed send does to its subscription (see the class comment, "Failed sends"): {@code true} ends
         * the results stream with {@code onError} at the first failure and sends nothing after it; {@code false}
         * publishes each failure as a result and goes on sending.
         *
         * <p>Default {@value KafkaMailboxSender#DEFAULT_STOP_ON_ERROR}, as reactor-kafka's
         * {@code SenderOptions.stopOnError}, and for two reasons of its own. A failed record leaves a hole in its
         * partition: the records sent after it land past it, so going on by default would turn a failure into a
         * silent reordering for the record's key. And a stream whose failures are results completes normally
         * however many records failed, so a downstream that never looks at {@link Result#isSuccess()} (a
         * {@code then()}, a {@code blockLast()}) would lose them without a sign; a stop makes it see the error.
         * Choose {@code false} to handle failures per record (a dead-letter topic, a retry), with
         * {@code retries} and {@code delivery.timeout.ms} deciding when Kafka gives a record up.
         *
         * @param stopOnError whether the first failed send stops the subscription
         * @return this
         */
        public Builder<K, V> stopOnError(boolean stopOnError) {
            this.stopOnError = stopOnError;
            return this;
        }

        /**
         * Sets the executor that delivers the results.
         *
         * @param executor runs the delivery of results to the downstream, and so the upstream's {@code onNext} and
         *        {@code KafkaProducer.send} after the first requests (see {@link MailboxPublisher}); must not run
         *        tasks on the submitting thread (it may be Kafka's I/O thread). Default: a daemon thread per
         *        sender, shut down by {@link KafkaMailboxSender#close}.
         * @return this
         */
        public Builder<K, V> resultExecutor(Executor executor) {
            this.resultExecutor = Objects.requireNonNull(executor, "executor");
            return this;
        }

        /**
         * {@return a sender with its {@code KafkaProducer}}
         * @throws org.apache.kafka.common.KafkaException if the producer configuration is invalid
         */
        public KafkaMailboxSender<K, V> build() {
            return new KafkaMailboxSender<>(this);
        }
    }
}

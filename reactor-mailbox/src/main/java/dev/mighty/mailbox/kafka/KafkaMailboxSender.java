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

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.Wakeable;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
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
 *         .doOnNext(r -> { if (!r.isSuccess()) log(r.exception()); })
 *         .blockLast();
 * }                                                    // close(): flush, then close the producer
 * }</pre>
 *
 * <h2>The in-flight bound and the result order</h2>
 * Each {@link #send} subscription has a mailbox of {@code maxInFlight} result slots (rounded up to a power of
 * two). A record is requested from the upstream only once a slot is reserved for its result, so the records
 * handed to the producer whose results have not been taken by the downstream are at most {@code maxInFlight}:
 * a slow downstream slows the upstream, and nothing is buffered without bound. Results are published <b>in
 * order of completion</b>: the order of the producer's callbacks, which Kafka runs in send order for the records
 * of one partition; across partitions the order is that of the broker's acknowledgements. Every record gets
 * exactly one result: its {@link RecordMetadata}, or the exception that failed it (including one thrown by
 * {@code KafkaProducer.send} itself, such as a serialization error); a failed record does not end the stream.
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
 * {@code max.block.ms}), never on the producer's I/O thread, where blocking would deadlock it.
 * <p>Throughput needs enough sends in flight to cover the round trip: {@code maxInFlight} of about
 * {@code records/s × round-trip time} (with {@code linger.ms} counted in the round trip).
 *
 * <h2>Visibility</h2>
 * The producer's completion of a send happens-before the downstream's receipt of its result.
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
    /** The flush-and-close timeout of {@link #close()}. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private final KafkaProducer<K, V> producer;
    private final int maxInFlight;
    private final Executor resultExecutor;
    private static final AtomicInteger SENDERS = new AtomicInteger();

    /** The sender's own result thread when no executor was given; shut down by {@link #close}. */
    private final ExecutorService ownExecutor;

    private KafkaMailboxSender(Builder<K, V> builder) {
        this.producer = new KafkaProducer<>(new HashMap<>(builder.config));
        this.maxInFlight = builder.maxInFlight;
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
     * @param records the records to send; subscribed once per subscription to the returned publisher
     * @return a cold publisher: each subscription sends {@code records} and publishes their results in order of
     *         completion
     * @throws NullPointerException if {@code records} is null
     */
    public Publisher<Result<K, V>> send(Publisher<? extends ProducerRecord<K, V>> records) {
        Objects.requireNonNull(records, "records");
        return downstream -> {
            Objects.requireNonNull(downstream, "downstream"); // §1.9
            final Mailbox<Result<K, V>> results = Mailboxes.bounded(maxInFlight);
            final SendSubscriber<K, V> sends = new SendSubscriber<>(producer, results);
            final MailboxPublisher<Result<K, V>> out =
                    new MailboxPublisher<>(results, MailboxPublisher.DEFAULT_BATCH_SIZE, resultExecutor);
            out.subscribe(new CancelRelay<>(downstream, sends, results));
            records.subscribe(sends);
        };
    }

    /** @return the producer, for what this class does not cover (metrics, partitionsFor); do not close it */
    public KafkaProducer<K, V> producer() {
        return producer;
    }

    /** As {@link #close(Duration)} with {@link #DEFAULT_CLOSE_TIMEOUT}. */
    @Override
    public void close() {
        close(DEFAULT_CLOSE_TIMEOUT);
    }

    /**
     * Flushes (every record handed to the producer is sent and its result published), then closes the producer;
     * sends after that fail with the producer's exception, as results. The sender's own result thread (if no
     * executor was given) finishes the deliveries already handed to it and stops: a subscription that still has
     * results to deliver after that ends with {@code onError(RejectedExecutionException)}, so close the sender
     * after its result streams have completed. Idempotent; any thread.
     *
     * @param timeout bounds the close after the flush ({@code KafkaProducer.close(timeout)}), {@code >= 0}
     */
    public void close(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
        try {
            producer.flush();
        } catch (RuntimeException closedAlready) {
            // flush on a closed producer: nothing left to flush
        }
        producer.close(timeout);
        if (ownExecutor != null) {
            ownExecutor.shutdown(); // results already handed to it are still delivered
        }
    }

    /**
     * The outcome of one send: the record and either its metadata or the exception that failed it.
     *
     * @param <K> the key type
     * @param <V> the value type
     */
    public static final class Result<K, V> {
        private final ProducerRecord<K, V> record;
        private final RecordMetadata metadata;
        private final Exception exception;

        Result(ProducerRecord<K, V> record, RecordMetadata metadata, Exception exception) {
            this.record = record;
            this.metadata = metadata;
            this.exception = exception;
        }

        /** @return the record as it was sent */
        public ProducerRecord<K, V> record() {
            return record;
        }

        /** @return the broker's acknowledgement (partition, offset), or null if the send failed */
        public RecordMetadata metadata() {
            return metadata;
        }

        /** @return what failed the send, or null if it succeeded */
        public Exception exception() {
            return exception;
        }

        /** @return whether the broker acknowledged the record */
        public boolean isSuccess() {
            return exception == null;
        }

        @Override
        public String toString() {
            return "Result{" + record.topic() + (exception == null ? " -> " + metadata : " failed: " + exception)
                    + "}";
        }
    }

    /**
     * The upstream side of one {@link #send} subscription: requests a record only for a reserved result slot.
     *
     * <p>Threads: the upstream signals serially (§1.3) from any thread; the request loop (a WIP trampoline) runs
     * on the subscribing thread, on the downstream's receiving thread (woken when it frees room), or on the
     * cancelling thread. Producer callbacks run on the producer's I/O thread (or the sending thread when
     * {@code send} fails at once). {@code inFlight} counts the sends not yet completed plus one for the upstream
     * until it terminates: whoever takes it to zero closes the results mailbox.
     */
    static final class SendSubscriber<K, V> implements Subscriber<ProducerRecord<K, V>> {
        private final KafkaProducer<K, V> producer;
        private final Mailbox<Result<K, V>> results;
        private final MailboxRing<Result<K, V>> ring;
        private final Wakeable roomWakeup = this::requestMore;
        private final AtomicLong inFlight = new AtomicLong(1L);

        private volatile Subscription upstream;
        private static final VarHandle UPSTREAM;
        private volatile int wip;
        private static final VarHandle WIP;
        private volatile boolean cancelled;
        /** Written before the upstream's token is released from {@code inFlight}; read after it reached zero. */
        private Throwable error;
        private boolean done; // signal side (§1.3)

        static {
            try {
                final MethodHandles.Lookup lookup = MethodHandles.lookup();
                UPSTREAM = lookup.findVarHandle(SendSubscriber.class, "upstream", Subscription.class);
                WIP = lookup.findVarHandle(SendSubscriber.class, "wip", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        SendSubscriber(KafkaProducer<K, V> producer, Mailbox<Result<K, V>> results) {
            this.producer = producer;
            this.results = results;
            this.ring = MailboxRing.of(results);
        }

        @Override
        public void onSubscribe(Subscription s) {
            Objects.requireNonNull(s, "s"); // §2.13
            if (!UPSTREAM.compareAndSet(this, null, s)) {
                s.cancel(); // §2.5
                return;
            }
            if (cancelled) {
                s.cancel();
                return;
            }
            requestMore();
        }

        @Override
        public void onNext(ProducerRecord<K, V> record) {
            Objects.requireNonNull(record, "record"); // §2.13
            if (done || cancelled) {
                return; // after a downstream cancel nothing more is handed to the producer (§2.8)
            }
            inFlight.incrementAndGet();
            try {
                producer.send(record, (metadata, exception) -> complete(record, metadata, exception));
            } catch (RuntimeException e) {
                // NOTE: KafkaProducer.send reports most failures through the callback; what it throws (a closed
                // producer, an interrupted wait) completes the record here, once.
                complete(record, null, e);
            }
        }

        private void complete(ProducerRecord<K, V> record, RecordMetadata metadata, Exception exception) {
            // uses the slot reserved when this record was requested: never full; false only once cancelled
            ring.sendReserved(new Result<>(record, exception == null ? metadata : null, exception));
            if (inFlight.decrementAndGet() == 0L) {
                terminate();
            }
        }

        @Override
        public void onError(Throwable t) {
            Objects.requireNonNull(t, "t"); // §2.13
            if (done) {
                return;
            }
            done = true;
            error = t;
            if (inFlight.decrementAndGet() == 0L) { // releases 'error' to whoever reaches zero
                terminate();
            }
        }

        @Override
        public void onComplete() {
            if (done) {
                return;
            }
            done = true;
            if (inFlight.decrementAndGet() == 0L) {
                terminate();
            }
        }

        private void terminate() {
            final Throwable error = this.error; // after the decrement that published it
            if (error == null) {
                results.close();
            } else {
                results.closeExceptionally(error);
            }
        }

        /** Downstream cancel: stop requesting, cancel the upstream. Any thread. */
        void cancel() {
            cancelled = true;
            requestMore(); // the loop makes the cancel call, serially with requests (§2.7)
        }

        /** Reserves what room there is and requests as much; registers for room when there is none. */
        void requestMore() {
            if ((int) WIP.getAndAdd(this, 1) != 0) {
                return; // the running loop goes round again
            }
            int missed = 1;
            for (;;) {
                final Subscription s = upstream;
                if (s != null) {
                    if (cancelled) {
                        s.cancel();
                    } else {
                        for (;;) {
                            if (ring.isClosed()) {
                                break;
                            }
                            final int n = ring.reserve(ring.capacity());
                            if (n > 0) {
                                s.request(n); // §3.17: at most the capacity outstanding
                            } else if (ring.awaitRoom(roomWakeup)) {
                                break; // woken when the downstream frees room
                            }
                        }
                    }
                }
                missed = (int) WIP.getAndAdd(this, -missed) - missed;
                if (missed == 0) {
                    return;
                }
            }
        }
    }

    /** Passes the results through; a downstream cancel (or a failing downstream) also cancels the upstream. */
    private static final class CancelRelay<K, V> implements Subscriber<Result<K, V>> {
        private final Subscriber<? super Result<K, V>> downstream;
        private final SendSubscriber<K, V> sends;
        private final Mailbox<Result<K, V>> results;

        CancelRelay(Subscriber<? super Result<K, V>> downstream, SendSubscriber<K, V> sends,
                Mailbox<Result<K, V>> results) {
            this.downstream = downstream;
            this.sends = sends;
            this.results = results;
        }

        @Override
        public void onSubscribe(Subscription s) {
            downstream.onSubscribe(new Subscription() {
                @Override
                public void request(long n) {
                    s.request(n);
                }

                @Override
                public void cancel() {
                    s.cancel();
                    stopUpstream();
                }
            });
        }

        @Override
        public void onNext(Result<K, V> result) {
            downstream.onNext(result);
        }

        @Override
        public void onError(Throwable t) {
            stopUpstream(); // the upstream failed (then this is a no-op), or the downstream threw from onNext
            downstream.onError(t);
        }

        @Override
        public void onComplete() {
            downstream.onComplete();
        }

        private void stopUpstream() {
            results.close(); // results of sends still in flight are dropped
            sends.cancel();
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
        private Executor resultExecutor;

        Builder(Map<String, Object> config) {
            this.config = Map.copyOf(Objects.requireNonNull(config, "producerConfig"));
        }

        /**
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
         * @return a sender with its {@code KafkaProducer}
         * @throws org.apache.kafka.common.KafkaException if the producer configuration is invalid
         */
        public KafkaMailboxSender<K, V> build() {
            return new KafkaMailboxSender<>(this);
        }
    }
}

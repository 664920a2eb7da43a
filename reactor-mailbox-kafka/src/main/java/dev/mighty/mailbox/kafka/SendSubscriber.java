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
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * The upstream side of one {@link KafkaMailboxSender#send} subscription: requests a record only for a reserved
 * result slot.
 *
 * <p>Threads: the upstream signals serially (§1.3) from any thread; the request loop (a WIP trampoline) runs
 * on the subscribing thread, on the downstream's receiving thread (woken when it frees room), on the
 * cancelling thread, or on the thread that saw a {@code stopOnError} failure. Producer callbacks run on the
 * producer's I/O thread (or the sending thread when {@code send} fails at once). {@code inFlight} counts the
 * sends not yet completed plus one for the upstream until it terminates or the subscription stops (whichever
 * takes {@code upstreamReleased} first releases it): whoever takes it to zero closes the results mailbox.
 *
 * <p>The stop: {@code stopped} is written (volatile) before the stop releases the upstream's token. A record
 * is handed to the producer only if its {@code onNext}, after counting itself in {@code inFlight}, still reads
 * {@code stopped == false}; the count cannot have reached zero before that increment (the upstream's token was
 * still in it), so the mailbox is never closed under a send. An {@code onNext} whose increment comes after the
 * stop's release reads {@code stopped == true} (the increment follows the release in the counter's order).
 *
 * @param <K> the key type
 * @param <V> the value type
 * @param <E> the upstream's element: a {@link ProducerRecord} or a {@link KafkaMailboxSender.CorrelatedRecord}
 * @param <R> the result type
 */
final class SendSubscriber<K, V, E, R extends KafkaMailboxSender.Result<K, V>> implements Subscriber<E> {
    private final KafkaProducer<K, V> producer;
    private final Mailbox<R> results;
    private final MailboxRing<R> ring;
    private final Function<? super E, ProducerRecord<K, V>> recordOf;
    private final ResultOf<E, R> resultOf;
    private final boolean stopOnError;
    /**
     * The request loop's room registration. The loop reserves result slots before it requests records: a result
     * is stored by the producer's I/O thread, which must never wait, so each requested record holds a slot for
     * its result. That is the hold-and-wait shape the shared-mailbox subscriber gave up, and it is safe here only
     * because the results mailbox is this subscription's own (made in {@code send}, never handed out to other
     * senders): nothing else waits for its room.
     */
    private final RoomTicket ticket;
    private final AtomicLong inFlight = new AtomicLong(1L);

    private volatile Subscription upstream;
    private static final VarHandle UPSTREAM;
    private volatile int wip;
    private static final VarHandle WIP;
    private volatile boolean cancelled;
    /** Set by the first failure under {@code stopOnError}: nothing more is sent, the upstream is cancelled. */
    private volatile boolean stopped;
    /** The upstream's token in {@code inFlight} was released (its terminal signal, or the stop). */
    private volatile boolean upstreamReleased;
    private static final VarHandle UPSTREAM_RELEASED;
    /** What the stream ends with: the upstream's error or the stop's failure, the first one set (CAS). */
    private volatile Throwable failure;
    private static final VarHandle FAILURE;
    private volatile boolean terminated;
    private static final VarHandle TERMINATED;
    private boolean done; // signal side (§1.3)

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            UPSTREAM = lookup.findVarHandle(SendSubscriber.class, "upstream", Subscription.class);
            WIP = lookup.findVarHandle(SendSubscriber.class, "wip", int.class);
            UPSTREAM_RELEASED = lookup.findVarHandle(SendSubscriber.class, "upstreamReleased", boolean.class);
            FAILURE = lookup.findVarHandle(SendSubscriber.class, "failure", Throwable.class);
            TERMINATED = lookup.findVarHandle(SendSubscriber.class, "terminated", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    SendSubscriber(KafkaProducer<K, V> producer, Mailbox<R> results,
            Function<? super E, ProducerRecord<K, V>> recordOf, ResultOf<E, R> resultOf, boolean stopOnError) {
        this.producer = producer;
        this.results = results;
        this.ticket = MailboxRing.of(results).roomTicket(this::requestMore);
        this.ring = MailboxRing.of(results);
        this.recordOf = recordOf;
        this.resultOf = resultOf;
        this.stopOnError = stopOnError;
    }

    @Override
    public void onSubscribe(Subscription s) {
        Objects.requireNonNull(s, "s"); // §2.13
        if (!UPSTREAM.compareAndSet(this, null, s)) {
            s.cancel(); // §2.5
            return;
        }
        if (cancelled || stopped) {
            s.cancel();
            return;
        }
        requestMore();
    }

    @Override
    public void onNext(E element) {
        Objects.requireNonNull(element, "element"); // §2.13
        if (done || cancelled || stopped) {
            return; // after a downstream cancel or a stop nothing more is handed to the producer (§2.8)
        }
        inFlight.incrementAndGet();
        if (stopped) { // pairs with the write in stop(), made before it released the upstream's token
            finishOne();
            return;
        }
        final ProducerRecord<K, V> record = recordOf.apply(element);
        try {
            producer.send(record, (metadata, exception) -> complete(element, metadata, exception));
        } catch (RuntimeException e) {
            // NOTE: KafkaProducer.send reports most failures through the callback; what it throws (a closed
            // producer, an interrupted wait) completes the record here, once.
            complete(element, null, e);
        }
    }

    private void complete(E element, RecordMetadata metadata, Exception exception) {
        if (exception == null || !stopOnError) {
            // uses the slot reserved when this record was requested: never full; false only once cancelled
            ring.sendReserved(resultOf.of(element, exception == null ? metadata : null, exception));
        } else {
            stop(exception);
            ring.releaseReserved(1L); // the failed record gets no result: its slot goes back
        }
        finishOne();
    }

    /** The first failure under {@code stopOnError}: stop sending, cancel the upstream, end with the failure. */
    private void stop(Exception exception) {
        FAILURE.compareAndSet(this, null, exception); // an earlier upstream error or failure stays first
        // NOTE: two failures may stop at once: the cancel is idempotent (§3.7), the release happens once
        stopped = true;
        requestMore(); // the loop cancels the upstream, serially with requests (§2.7)
        releaseUpstream(); // the upstream may never signal again after the cancel (§3.13)
    }

    private void finishOne() {
        if (inFlight.decrementAndGet() == 0L) {
            terminate();
        }
    }

    private void releaseUpstream() {
        if (UPSTREAM_RELEASED.compareAndSet(this, false, true)) {
            finishOne();
        }
    }

    @Override
    public void onError(Throwable t) {
        Objects.requireNonNull(t, "t"); // §2.13
        if (done) {
            return;
        }
        done = true;
        FAILURE.compareAndSet(this, null, t); // after a stop, the stop's failure stays first
        releaseUpstream(); // the CAS and the decrement publish 'failure' to whoever reaches zero
    }

    @Override
    public void onComplete() {
        if (done) {
            return;
        }
        done = true;
        releaseUpstream();
    }

    private void terminate() {
        if (!TERMINATED.compareAndSet(this, false, true)) {
            return;
        }
        final Throwable failure = this.failure; // after the decrement that published it
        if (failure == null) {
            results.close();
        } else {
            results.closeExceptionally(failure);
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
                if (cancelled || stopped) {
                    ticket.withdraw();
                    s.cancel();
                } else {
                    for (;;) {
                        if (ring.isClosed() || cancelled || stopped) {
                            ticket.withdraw();
                            break; // a cancel or a stop during a request: the next pass cancels
                        }
                        final int n = ring.reserve(ring.capacity());
                        if (n > 0) {
                            ticket.claimed(); // the room a wake-up was for went into our reservation
                            s.request(n); // §3.17: at most the capacity outstanding
                        } else if (ticket.await()) {
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

    /** Makes the result of one upstream element. */
    @FunctionalInterface
    interface ResultOf<E, R> {
        R of(E element, RecordMetadata metadata, Exception exception);
    }

    /** Passes the results through; a downstream cancel (or a failing downstream) also cancels the upstream. */
    static final class CancelRelay<R> implements Subscriber<R> {
        private final Subscriber<? super R> downstream;
        private final SendSubscriber<?, ?, ?, ?> sends;
        private final Mailbox<R> results;

        CancelRelay(Subscriber<? super R> downstream, SendSubscriber<?, ?, ?, ?> sends, Mailbox<R> results) {
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
        public void onNext(R result) {
            downstream.onNext(result);
        }

        @Override
        public void onError(Throwable t) {
            stopUpstream(); // the upstream failed or a send stopped (then this is a no-op), or onNext threw
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
}

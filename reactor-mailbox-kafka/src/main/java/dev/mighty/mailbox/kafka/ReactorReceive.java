package dev.mighty.mailbox.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import dev.mighty.mailbox.reactor.MailboxFlux;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

/**
 * The Reactor faces of the Kafka glue, in a class of their own: {@link KafkaMailboxReceiver} and
 * {@link ReceivedRecord} link to reactor-core only through the methods that return a {@code Flux} or a
 * {@code Mono}, and those call here, so the low-level path loads and runs without reactor-core.
 *
 * <h2>Threads</h2>
 * The {@code Flux} of {@link #receive} subscribes the fused {@code MailboxFlux} of the receiver's mailbox, then
 * {@code publishOn(scheduler)}: the downstream's {@code onNext} runs on that scheduler's worker, never on the poll
 * thread, and the worker polls the mailbox itself (queue fusion), so a cancel leaves every record it did not take
 * in the mailbox (not acknowledged, so not committed: delivered again to the partition's next owner). Records
 * whose assignment ended while they waited in the mailbox are skipped on the worker, just before delivery.
 */
final class ReactorReceive {
    private ReactorReceive() {
    }

    /**
     * @param own whether {@code scheduler} was made for this stream (then it is disposed when the stream ends)
     */
    static <K, V> Flux<ReceivedRecord<K, V>> receive(KafkaMailboxReceiver<K, V> receiver, Scheduler scheduler,
            boolean own) {
        return Flux.defer(() -> {
            final IllegalStateException refused = receiver.claimReceive();
            if (refused != null) {
                return Flux.error(refused);
            }
            return claimed(receiver, scheduler, own);
        });
    }

    /** As {@link #receive}, for a caller that made the claim itself. */
    static <K, V> Flux<ReceivedRecord<K, V>> claimed(KafkaMailboxReceiver<K, V> receiver, Scheduler scheduler,
            boolean own) {
        final Scheduler worker = own ? Schedulers.newSingle(receiver.threadName("receive"), true) : scheduler;
        // The start hook goes after publishOn: a doOnSubscribe between the mailbox's flux and publishOn would
        // refuse publishOn's fusion request (a peek operator declines fusion across a thread barrier), and
        // publishOn would then take batches into a queue of its own, on the poll thread.
        return MailboxFlux.from(receiver.mailbox())
                .publishOn(worker)
                .doOnSubscribe(subscription -> receiver.start())
                // a record whose assignment ended before it got here goes to the partition's next owner:
                // handing it on would only make a duplicate whose acknowledgement counts for nothing
                .filter(r -> !r.isRevoked())
                .doFinally(signal -> {
                    // cancel, error or completion downstream: leave the group (commits what is acknowledged);
                    // never blocks the signalling thread, which may be the one that acknowledges
                    receiver.closeAsync(receiver.receiveCloseTimeout());
                    if (own) {
                        // N10: not dispose(): this runs on the worker itself (a cancel or completion there),
                        // and dispose() interrupts its thread, under the user code still running on it. A
                        // graceful dispose lets that finish and then stops the thread.
                        worker.disposeGracefully().subscribe();
                    }
                });
    }

    /**
     * Each record is acknowledged once the downstream's {@code onNext} for it has returned, and only if the
     * downstream did not cancel during it: a Reactor operator whose function throws (a {@code map}, a
     * {@code doOnNext}) catches the exception, cancels its upstream and signals {@code onError}, so a record whose
     * processing failed is never acknowledged (it is redelivered to the partition's next owner). A {@code handle} or
     * {@code doOnNext} could not do this: their sink only stores the value, and the acknowledgement would run before
     * the downstream saw the record.
     */
    static <K, V> Flux<ConsumerRecord<K, V>> autoAck(Flux<ReceivedRecord<K, V>> received) {
        return received.transform(Operators.<ReceivedRecord<K, V>, ConsumerRecord<K, V>>lift(
                (scannable, downstream) -> new AutoAck<>(downstream)));
    }

    /**
     * The operator of {@link #autoAck}. Threads: signals arrive serially (§1.3) on the {@code receive()} worker;
     * {@code request} and {@code cancel} come from the downstream, on any thread.
     */
    static final class AutoAck<K, V> implements CoreSubscriber<ReceivedRecord<K, V>>, Subscription {
        private final CoreSubscriber<? super ConsumerRecord<K, V>> downstream;
        private Subscription upstream;
        /** Set by the downstream's cancel; read after each onNext. */
        private volatile boolean cancelled;

        AutoAck(CoreSubscriber<? super ConsumerRecord<K, V>> downstream) {
            this.downstream = downstream;
        }

        @Override
        public Context currentContext() {
            return downstream.currentContext();
        }

        @Override
        public void onSubscribe(Subscription s) {
            if (Operators.validate(upstream, s)) {
                upstream = s;
                downstream.onSubscribe(this);
            }
        }

        @Override
        public void onNext(ReceivedRecord<K, V> r) {
            downstream.onNext(r.record());
            // NOTE: a cancel that lands after this read (from another thread) leaves the record acknowledged: its
            // onNext had returned, so its processing ran to its end.
            if (!cancelled) {
                r.acknowledge();
            }
        }

        @Override
        public void onError(Throwable t) {
            downstream.onError(t);
        }

        @Override
        public void onComplete() {
            downstream.onComplete();
        }

        @Override
        public void request(long n) {
            upstream.request(n);
        }

        @Override
        public void cancel() {
            cancelled = true;
            upstream.cancel();
        }
    }

    /**
     * Each record is committed before it is handed on (one commit per record, in order); a record whose assignment
     * ends before its commit is not handed on (the partition's next owner gets it), so none is delivered twice.
     */
    static <K, V> Flux<ConsumerRecord<K, V>> atMostOnce(Flux<ReceivedRecord<K, V>> received) {
        return received.concatMap(r -> Mono.fromCompletionStage(r::commitAsync)
                .thenReturn(r.record())
                .onErrorResume(IllegalStateException.class, revoked -> Mono.empty()), 1);
    }

    static Mono<Void> commit(ReceivedRecord<?, ?> record) {
        return Mono.fromCompletionStage(record::commitAsync);
    }
}

package dev.mighty.mailbox.kafka;

import org.apache.kafka.clients.consumer.ConsumerRecord;

import dev.mighty.mailbox.reactor.MailboxFlux;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

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
                            worker.dispose();
                        }
                    });
        });
    }

    /** Each record is acknowledged once the downstream's {@code onNext} for it has returned. */
    static <K, V> Flux<ConsumerRecord<K, V>> autoAck(Flux<ReceivedRecord<K, V>> received) {
        return received.handle((r, sink) -> {
            sink.next(r.record());
            r.acknowledge();
        });
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

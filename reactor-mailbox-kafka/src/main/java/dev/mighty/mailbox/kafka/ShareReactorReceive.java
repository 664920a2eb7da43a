package dev.mighty.mailbox.kafka;

import dev.mighty.mailbox.reactor.MailboxFlux;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The Reactor face of {@link KafkaShareReceiver}, in a class of its own so that the receiver links to reactor-core
 * only through {@link KafkaShareReceiver#receive()} and {@link KafkaShareReceiver#receive(Scheduler)}: the low-level
 * path loads and runs without reactor-core.
 *
 * <h2>Threads</h2>
 * The {@code Flux} subscribes the fused {@code MailboxFlux} of the receiver's mailbox, then
 * {@code publishOn(scheduler)}: the downstream's {@code onNext} runs on that scheduler's worker, never on the poll
 * thread, and the worker polls the mailbox itself (queue fusion), so a cancel leaves every record it did not take in
 * the mailbox, where the receiver's close releases it. Records released by the close before they reached the worker
 * are skipped on the worker.
 */
final class ShareReactorReceive {
    private ShareReactorReceive() {
    }

    /**
     * @param own whether {@code scheduler} is made for this stream (then it is disposed when the stream ends)
     */
    static <K, V> Flux<ReceivedShareRecord<K, V>> receive(KafkaShareReceiver<K, V> receiver, Scheduler scheduler,
            boolean own) {
        return Flux.defer(() -> {
            final IllegalStateException refused = receiver.claimReceive();
            if (refused != null) {
                return Flux.error(refused);
            }
            final Scheduler worker = own ? Schedulers.newSingle(receiver.threadName("receive"), true) : scheduler;
            // The start hook goes after publishOn: a peek operator between the mailbox's flux and publishOn would
            // refuse publishOn's fusion, and publishOn would then prefetch into a queue of its own on the poll thread.
            return MailboxFlux.from(receiver.mailbox())
                    .publishOn(worker)
                    .doOnSubscribe(subscription -> receiver.start())
                    // released by the close while it waited in the mailbox: another consumer of the group has it
                    .filter(r -> !r.isSettled())
                    .doFinally(signal -> {
                        // cancel, error or completion downstream: release what is not settled, leave the group;
                        // never blocks the signalling thread
                        receiver.closeAsync(receiver.closeTimeout());
                        if (own) {
                            // not dispose(): this may run on the worker itself, under user code (see ReactorReceive)
                            worker.disposeGracefully().subscribe();
                        }
                    });
        });
    }
}

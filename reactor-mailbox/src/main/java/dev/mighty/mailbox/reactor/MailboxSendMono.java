package dev.mighty.mailbox.reactor;

import java.util.Objects;

import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.SendResult;
import dev.mighty.mailbox.internal.MailboxRing;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Mono;

/**
 * {@link MailboxMonos#send}: offers the message, and while the mailbox is full waits for room with
 * {@link MailboxRing#awaitRoom}. Contract, threads and progress as {@link MailboxMonos} and
 * {@link MailboxWakeSubscription} say.
 *
 * @param <T> the message type
 */
final class MailboxSendMono<T> extends Mono<Void> implements Scannable {
    private final MailboxRing<T> ring;
    private final T msg;

    MailboxSendMono(MailboxRing<T> ring, T msg) {
        this.ring = ring;
        this.msg = msg;
    }

    /** @return the Mono, through Reactor's assembly hooks */
    static <T> Mono<Void> create(MailboxRing<T> ring, T msg) {
        return onAssembly(new MailboxSendMono<>(ring, msg));
    }

    @Override
    public void subscribe(CoreSubscriber<? super Void> actual) {
        Objects.requireNonNull(actual, "subscriber"); // §1.9
        final SendSubscription<T> s = new SendSubscription<>(ring, msg, actual);
        actual.onSubscribe(s);
        s.start();
    }

    @Override
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    public Object scanUnsafe(Attr key) {
        return MailboxTerminatedMono.scanRing(ring, key);
    }

    @Override
    public String stepName() {
        return "send(" + ring.name() + ")";
    }

    static final class SendSubscription<T> extends MailboxWakeSubscription {
        private final MailboxRing<T> ring;
        private final T msg;

        SendSubscription(MailboxRing<T> ring, T msg, CoreSubscriber<? super Void> downstream) {
            super(ring, downstream);
            this.ring = ring;
            this.msg = msg;
        }

        @Override
        void attempt() {
            for (;;) {
                final SendResult result = ring.offer(msg);
                if (result == SendResult.OK) {
                    complete();
                    return;
                }
                if (result == SendResult.CLOSED) {
                    error(new MailboxClosedException("send on a closed mailbox: name=" + ring.name(),
                            ring.closeCause()));
                    return;
                }
                // NOTE: awaitRoom's push is a full fence before it re-reads the consumer index, paired with the
                // fence in afterReceive before the consumer looks for waiters: either it sees room (false: offer
                // again) or the consumer sees us and wakes us. A registration whose answer was false may still
                // fire later: the wake then costs one offer.
                if (ring.awaitRoom(this)) {
                    return;
                }
            }
        }
    }
}

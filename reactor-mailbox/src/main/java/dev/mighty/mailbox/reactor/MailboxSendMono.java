package dev.mighty.mailbox.reactor;

import java.util.Objects;

import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.SendResult;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Mono;

/**
 * {@link MailboxMonos#send}: offers the message, and while the mailbox is full waits for room with a
 * {@link RoomTicket}, which a cancel withdraws (handing on a wake-up that came too late). Contract, threads and
 * progress as {@link MailboxMonos} and
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
        /** The loop's room registration; only the loop touches it. */
        private final RoomTicket ticket;

        SendSubscription(MailboxRing<T> ring, T msg, CoreSubscriber<? super Void> downstream) {
            super(ring, downstream);
            this.ring = ring;
            this.msg = msg;
            this.ticket = ring.roomTicket(this);
        }

        @Override
        void attempt() {
            for (;;) {
                final SendResult result = ring.offer(msg);
                if (result == SendResult.OK) {
                    ticket.claimed();
                    complete();
                    return;
                }
                if (result == SendResult.CLOSED) {
                    error(new MailboxClosedException("send on a closed mailbox: name=" + ring.name(),
                            ring.closeCause()));
                    return;
                }
                // NOTE: await()'s count increment is a full fence before it re-reads the consumer index, paired with
                // the fence in afterReceive before the consumer looks for waiters: either it sees room (false: offer
                // again) or the consumer sees us and wakes us. A wake that comes after the Mono ended costs one pass.
                if (ticket.await()) {
                    return;
                }
            }
        }

        @Override
        void stop() {
            ticket.withdraw(); // cancelled or ended: a wake-up meant for us goes to the next waiter
        }
    }
}

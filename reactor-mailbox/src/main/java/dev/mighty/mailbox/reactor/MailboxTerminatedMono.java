package dev.mighty.mailbox.reactor;

import java.util.Objects;

import dev.mighty.mailbox.internal.MailboxRing;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Mono;

/**
 * {@link MailboxMonos#terminated}: waits for {@link MailboxRing#onTerminated} (woken by the close, or by the
 * receive that takes the last message of a closed mailbox), until {@link MailboxRing#isTerminated()}. Contract, threads and progress as {@link MailboxMonos} and
 * {@link MailboxWakeSubscription} say.
 */
final class MailboxTerminatedMono extends Mono<Void> implements Scannable {
    private final MailboxRing<?> ring;

    MailboxTerminatedMono(MailboxRing<?> ring) {
        this.ring = ring;
    }

    /** @return the Mono, through Reactor's assembly hooks */
    static Mono<Void> create(MailboxRing<?> ring) {
        return onAssembly(new MailboxTerminatedMono(ring));
    }

    @Override
    public void subscribe(CoreSubscriber<? super Void> actual) {
        Objects.requireNonNull(actual, "subscriber"); // §1.9
        final TerminatedSubscription s = new TerminatedSubscription(ring, actual);
        actual.onSubscribe(s);
        s.start();
    }

    @Override
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    public Object scanUnsafe(Attr key) {
        return scanRing(ring, key);
    }

    /** The keys both Monos report: the mailbox's name, capacity, size, and whether it is closed and drained. */
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    static Object scanRing(MailboxRing<?> ring, Attr key) {
        return key == Attr.TERMINATED ? (Object) ring.isTerminated() : RingScans.scan(ring, key);
    }

    @Override
    public String stepName() {
        return "terminated(" + ring.name() + ")";
    }

    static final class TerminatedSubscription extends MailboxWakeSubscription {
        TerminatedSubscription(MailboxRing<?> ring, CoreSubscriber<? super Void> downstream) {
            super(ring, downstream);
        }

        @Override
        void attempt() {
            final MailboxRing<?> ring = this.ring;
            for (;;) {
                if (ring.isTerminated()) {
                    final Throwable cause = ring.closeCause();
                    if (cause == null) {
                        complete();
                    } else {
                        error(cause);
                    }
                    return;
                }
                // The closer or the receive that drains the mailbox wakes us (at once if it is drained already).
                ring.onTerminated(this);
                if (!ring.isTerminated()) {
                    return;
                }
            }
        }
    }
}

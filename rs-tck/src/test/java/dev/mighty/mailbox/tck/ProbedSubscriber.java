package dev.mighty.mailbox.tck;

import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import org.reactivestreams.tck.SubscriberWhiteboxVerification.SubscriberPuppet;
import org.reactivestreams.tck.SubscriberWhiteboxVerification.WhiteboxSubscriberProbe;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * The whitebox probe pattern of the TCK README, by delegation ({@link MailboxSubscriber} is final): each signal goes
 * to the subscriber under test first, then is reported to the probe. Delegating first matters: {@code onNext(null)}
 * and {@code onSubscribe(null)} must throw the subscriber's own NPE (§2.13) before anything is registered.
 *
 * <p>The puppet drives the subscriber the way its users do, through the mailbox, since a {@code MailboxSubscriber}
 * has no {@code request} of its own: its demand is the room it has reserved in the mailbox.
 * <ul>
 *   <li>{@code triggerRequest(n)}: the mailbox's consumer (here the TestNG thread) receives up to {@code n}
 *       messages; the room this frees is what the subscriber requests again. The TCK's triggers in a whole test
 *       add up to less than the capacity the subscriber requests in {@code onSubscribe}, which already satisfies
 *       "at least {@code n} eventually requested"; receiving makes the replenishing path run too.</li>
 *   <li>{@code signalCancel()}: closes the mailbox; a {@code MailboxSubscriber} cancels its upstream when its
 *       mailbox is closed by someone else (and must then ignore late {@code onNext}s, §2.8).</li>
 * </ul>
 */
final class ProbedSubscriber<T> implements Subscriber<T> {
    private final MailboxSubscriber<T> subscriber;
    private final Mailbox<T> mailbox;
    private final WhiteboxSubscriberProbe<T> probe;

    ProbedSubscriber(Mailbox<T> mailbox, WhiteboxSubscriberProbe<T> probe) {
        this.subscriber = new MailboxSubscriber<>(mailbox);
        this.mailbox = mailbox;
        this.probe = probe;
    }

    @Override
    public void onSubscribe(Subscription subscription) {
        subscriber.onSubscribe(subscription);
        // a second onSubscribe (§2.5) registers nothing: the probe keeps the first puppet
        probe.registerOnSubscribe(new SubscriberPuppet() {
            @Override
            public void triggerRequest(long elements) {
                mailbox.tryRecvMany(m -> { }, (int) Math.min(elements, Integer.MAX_VALUE));
            }

            @Override
            public void signalCancel() {
                mailbox.close();
            }
        });
    }

    @Override
    public void onNext(T element) {
        subscriber.onNext(element);
        probe.registerOnNext(element);
    }

    @Override
    public void onError(Throwable cause) {
        subscriber.onError(cause);
        probe.registerOnError(cause);
    }

    @Override
    public void onComplete() {
        subscriber.onComplete();
        probe.registerOnComplete();
    }

    @Override
    public String toString() {
        return "ProbedSubscriber[" + subscriber + "]";
    }
}

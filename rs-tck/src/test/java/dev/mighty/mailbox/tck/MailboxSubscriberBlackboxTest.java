package dev.mighty.mailbox.tck;

import org.reactivestreams.Subscriber;
import org.reactivestreams.tck.SubscriberBlackboxVerification;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * {@code SubscriberBlackboxVerification} of {@link MailboxSubscriber}, as it is used: a consumer thread drains its
 * mailbox ({@link Tck#CAPACITY}) until it is closed, so the room the subscriber requests keeps coming back. The
 * subscriber requests by itself in {@code onSubscribe}, so {@code triggerRequest} is not overridden.
 */
@Test
public final class MailboxSubscriberBlackboxTest extends SubscriberBlackboxVerification<Long> {
    private final MailboxWorkers workers = new MailboxWorkers();

    public MailboxSubscriberBlackboxTest() {
        super(Tck.environment());
    }

    @Override
    public Subscriber<Long> createSubscriber() {
        return new MailboxSubscriber<>(workers.drain(Mailboxes.<Long>bounded(Tck.CAPACITY)));
    }

    @Override
    public Long createElement(int element) {
        return (long) element;
    }

    @AfterMethod(alwaysRun = true)
    public void stopWorkers() throws InterruptedException {
        workers.stopAll();
    }
}

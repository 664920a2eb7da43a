package dev.mighty.mailbox.tck;

import org.reactivestreams.Subscriber;
import org.reactivestreams.tck.SubscriberWhiteboxVerification;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * {@code SubscriberWhiteboxVerification} of {@link MailboxSubscriber} writing into an MPSC mailbox of
 * {@link Tck#CAPACITY}, observed through {@link ProbedSubscriber}. The TestNG thread is the mailbox's consumer.
 */
@Test
public final class MailboxSubscriberWhiteboxTest extends SubscriberWhiteboxVerification<Long> {
    private final MailboxWorkers workers = new MailboxWorkers();

    public MailboxSubscriberWhiteboxTest() {
        super(Tck.environment());
    }

    @Override
    public Subscriber<Long> createSubscriber(WhiteboxSubscriberProbe<Long> probe) {
        final Mailbox<Long> mailbox = workers.track(Mailboxes.bounded(Tck.CAPACITY));
        return new ProbedSubscriber<>(mailbox, probe);
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

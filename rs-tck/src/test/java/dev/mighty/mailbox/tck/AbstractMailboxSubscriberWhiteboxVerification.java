package dev.mighty.mailbox.tck;

import org.reactivestreams.Subscriber;
import org.reactivestreams.tck.SubscriberWhiteboxVerification;
import org.testng.annotations.AfterMethod;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * {@code SubscriberWhiteboxVerification} of {@link MailboxSubscriber} writing into an MPSC mailbox, observed through
 * {@link ProbedSubscriber}; subclasses choose the mailbox's capacity. The TestNG thread is the mailbox's consumer.
 */
public abstract class AbstractMailboxSubscriberWhiteboxVerification extends SubscriberWhiteboxVerification<Long> {
    private final int capacity;
    private final MailboxWorkers workers = new MailboxWorkers();

    AbstractMailboxSubscriberWhiteboxVerification(int capacity) {
        super(Tck.environment());
        this.capacity = capacity;
    }

    @Override
    public Subscriber<Long> createSubscriber(WhiteboxSubscriberProbe<Long> probe) {
        final Mailbox<Long> mailbox = workers.track(Mailboxes.bounded(capacity));
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

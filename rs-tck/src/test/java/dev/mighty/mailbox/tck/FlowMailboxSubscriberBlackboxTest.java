package dev.mighty.mailbox.tck;

import java.util.concurrent.Flow;

import org.reactivestreams.FlowAdapters;
import org.reactivestreams.tck.flow.FlowSubscriberBlackboxVerification;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * {@code FlowSubscriberBlackboxVerification} of {@link MailboxSubscriber} seen as a JDK {@link Flow.Subscriber}
 * through {@code FlowAdapters.toFlowSubscriber}; drained as in {@link MailboxSubscriberBlackboxTest}, with
 * {@link OpaqueFlow} keeping the adapters from unwrapping each other.
 */
@Test
public final class FlowMailboxSubscriberBlackboxTest extends FlowSubscriberBlackboxVerification<Long> {
    private final MailboxWorkers workers = new MailboxWorkers();

    public FlowMailboxSubscriberBlackboxTest() {
        super(Tck.environment());
    }

    @Override
    public Flow.Subscriber<Long> createFlowSubscriber() {
        return OpaqueFlow.subscriber(FlowAdapters.toFlowSubscriber(
                new MailboxSubscriber<>(workers.drain(Mailboxes.<Long>bounded(Tck.CAPACITY)))));
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

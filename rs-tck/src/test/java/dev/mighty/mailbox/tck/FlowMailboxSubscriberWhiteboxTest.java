package dev.mighty.mailbox.tck;

import java.util.concurrent.Flow;

import org.reactivestreams.FlowAdapters;
import org.reactivestreams.tck.flow.FlowSubscriberWhiteboxVerification;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxSubscriber;

/**
 * {@code FlowSubscriberWhiteboxVerification} of {@link MailboxSubscriber} seen as a JDK {@link Flow.Subscriber}
 * through {@code FlowAdapters.toFlowSubscriber}; probed as in {@link MailboxSubscriberWhiteboxTest}, with
 * {@link OpaqueFlow} keeping the adapters from unwrapping each other.
 */
@Test
public final class FlowMailboxSubscriberWhiteboxTest extends FlowSubscriberWhiteboxVerification<Long> {
    private final MailboxWorkers workers = new MailboxWorkers();

    public FlowMailboxSubscriberWhiteboxTest() {
        super(Tck.environment());
    }

    @Override
    protected Flow.Subscriber<Long> createFlowSubscriber(WhiteboxSubscriberProbe<Long> probe) {
        return OpaqueFlow.subscriber(FlowAdapters.toFlowSubscriber(
                new ProbedSubscriber<>(workers.track(Mailboxes.<Long>bounded(Tck.CAPACITY)), probe)));
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

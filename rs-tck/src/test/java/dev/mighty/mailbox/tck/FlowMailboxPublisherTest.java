package dev.mighty.mailbox.tck;

import java.util.concurrent.Flow;

import org.reactivestreams.FlowAdapters;
import org.reactivestreams.tck.flow.FlowPublisherVerification;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

import dev.mighty.mailbox.rs.MailboxPublisher;

/**
 * {@code FlowPublisherVerification} of {@link MailboxPublisher} seen as a JDK {@link Flow.Publisher} through
 * {@code FlowAdapters.toFlowPublisher}, batch size 16, fed live; the publisher as in
 * {@link AbstractMailboxPublisherVerification}. {@link OpaqueFlow} keeps the adapters from unwrapping each other.
 */
@Test
public final class FlowMailboxPublisherTest extends FlowPublisherVerification<Long> {
    private static final int BATCH_SIZE = 16;

    private final MailboxWorkers workers = new MailboxWorkers();

    public FlowMailboxPublisherTest() {
        super(Tck.environment(), Tck.PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS);
    }

    @Override
    public Flow.Publisher<Long> createFlowPublisher(long elements) {
        return OpaqueFlow.publisher(FlowAdapters.toFlowPublisher(
                new MailboxPublisher<>(workers.longs(elements, MailboxWorkers.Feed.LIVE), BATCH_SIZE)));
    }

    @Override
    public Flow.Publisher<Long> createFailedFlowPublisher() {
        return OpaqueFlow.publisher(FlowAdapters.toFlowPublisher(
                new MailboxPublisher<>(MailboxWorkers.<Long>failed(), BATCH_SIZE)));
    }

    /** Any finite stream, as {@link AbstractMailboxPublisherVerification#maxElementsFromPublisher()}. */
    @Override
    public long maxElementsFromPublisher() {
        return Long.MAX_VALUE - 1;
    }

    @AfterMethod(alwaysRun = true)
    public void stopWorkers() throws InterruptedException {
        workers.stopAll();
    }
}

package dev.mighty.mailbox.tck;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;

import org.reactivestreams.FlowAdapters;
import org.reactivestreams.tck.flow.IdentityFlowProcessorVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxProcessor;

/**
 * {@code IdentityFlowProcessorVerification} of {@link MailboxProcessor} seen as a JDK {@link Flow.Processor}
 * through {@code FlowAdapters.toFlowProcessor}; configured as {@link MailboxProcessorTest}, with {@link OpaqueFlow}
 * keeping the adapters from unwrapping each other.
 */
@Test
public final class FlowMailboxProcessorTest extends IdentityFlowProcessorVerification<Long> {
    private final MailboxWorkers workers = new MailboxWorkers();
    private ExecutorService helperPublisherExecutor;

    public FlowMailboxProcessorTest() {
        super(Tck.environment(), Tck.PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS);
    }

    @Override
    protected Flow.Processor<Long, Long> createIdentityFlowProcessor(int bufferSize) {
        return OpaqueFlow.processor(FlowAdapters.toFlowProcessor(new MailboxProcessor<>(
                workers.track(Mailboxes.<Long>bounded(bufferSize)), MailboxProcessorTest.BATCH_SIZE)));
    }

    @Override
    protected Flow.Publisher<Long> createFailedFlowPublisher() {
        return OpaqueFlow.publisher(FlowAdapters.toFlowPublisher(MailboxProcessorTest.failedProcessor()));
    }

    /** One consumer per mailbox; see {@link MailboxProcessorTest#maxSupportedSubscribers()}. */
    @Override
    public long maxSupportedSubscribers() {
        return 1;
    }

    @Override
    public Long createElement(int element) {
        return (long) element;
    }

    @Override
    public ExecutorService publisherExecutorService() {
        return helperPublisherExecutor;
    }

    @BeforeClass
    public void startHelperPublisherExecutor() {
        helperPublisherExecutor = Executors.newFixedThreadPool(2, r -> {
            final Thread thread = new Thread(r, "tck-helper-publisher");
            thread.setDaemon(true);
            return thread;
        });
    }

    @AfterClass(alwaysRun = true)
    public void stopHelperPublisherExecutor() {
        helperPublisherExecutor.shutdownNow();
    }

    @AfterMethod(alwaysRun = true)
    public void stopWorkers() throws InterruptedException {
        workers.stopAll();
    }
}

package dev.mighty.mailbox.tck;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.reactivestreams.Processor;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import org.reactivestreams.tck.IdentityProcessorVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.rs.MailboxProcessor;

/**
 * {@code IdentityProcessorVerification} of {@link MailboxProcessor} over an MPSC mailbox of the TCK's buffer size
 * (16), batch size 4. The TCK feeds it from its own asynchronous helper publisher and checks both faces: the
 * subscriber face as a whitebox (its probe subscribes to the processor) and the publisher face as a
 * {@code PublisherVerification}.
 */
@Test
public final class MailboxProcessorTest extends IdentityProcessorVerification<Long> {
    static final int BATCH_SIZE = 4;

    private final MailboxWorkers workers = new MailboxWorkers();
    private ExecutorService helperPublisherExecutor;

    public MailboxProcessorTest() {
        super(Tck.environment(), Tck.PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS);
    }

    @Override
    public Processor<Long, Long> createIdentityProcessor(int bufferSize) {
        return new MailboxProcessor<>(workers.track(Mailboxes.<Long>bounded(bufferSize)), BATCH_SIZE);
    }

    /** A processor whose upstream failed before anyone subscribed downstream. */
    @Override
    public Publisher<Long> createFailedPublisher() {
        return failedProcessor();
    }

    static MailboxProcessor<Long> failedProcessor() {
        final MailboxProcessor<Long> processor = new MailboxProcessor<>(Mailboxes.bounded(Tck.CAPACITY), BATCH_SIZE);
        processor.onSubscribe(new Subscription() {
            @Override
            public void request(long n) {
                // an upstream that has failed already produces nothing
            }

            @Override
            public void cancel() {
            }
        });
        processor.onError(new RuntimeException("upstream failed before subscribe (TCK)"));
        return processor;
    }

    /**
     * One: a mailbox has one consumer at a time, so the processor's publisher face is unicast, and a second live
     * subscriber gets {@code onSubscribe} then {@code onError(IllegalStateException)} (§1.9). The TCK then skips
     * the two tests that need two subscribers at once (listed in {@code docs/tck.md}).
     */
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

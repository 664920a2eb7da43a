package dev.mighty.mailbox.tck;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

import dev.mighty.mailbox.rs.MailboxPublisher;

/**
 * {@code MailboxPublisher(mailbox, 16, executor)}: every drain, hence every {@code onNext}, runs as a task on a pool
 * of two threads, at most one task per subscription at a time, so signals hop threads between batches (§1.3 must
 * still hold) and {@code request} from {@code onNext} only submits. Fed live; the publisher otherwise as
 * {@link AbstractMailboxPublisherVerification}.
 */
@Test
public final class MailboxPublisherExecutorTest extends PublisherVerification<Long> {
    private static final int BATCH_SIZE = 16;

    private final MailboxWorkers workers = new MailboxWorkers();
    private ExecutorService executor;

    public MailboxPublisherExecutorTest() {
        super(Tck.environment(), Tck.PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS);
    }

    @Override
    public Publisher<Long> createPublisher(long elements) {
        return new MailboxPublisher<>(workers.longs(elements, MailboxWorkers.Feed.LIVE), BATCH_SIZE, executor);
    }

    @Override
    public Publisher<Long> createFailedPublisher() {
        return new MailboxPublisher<>(MailboxWorkers.<Long>failed(), BATCH_SIZE, executor);
    }

    /** Any finite stream, as {@link AbstractMailboxPublisherVerification#maxElementsFromPublisher()}. */
    @Override
    public long maxElementsFromPublisher() {
        return Long.MAX_VALUE - 1;
    }

    @BeforeClass
    public void startExecutor() {
        executor = Executors.newFixedThreadPool(2, r -> {
            final Thread thread = new Thread(r, "tck-drain");
            thread.setDaemon(true);
            return thread;
        });
    }

    @AfterClass(alwaysRun = true)
    public void stopExecutor() {
        executor.shutdownNow();
    }

    @AfterMethod(alwaysRun = true)
    public void stopWorkers() throws InterruptedException {
        workers.stopAll();
    }
}

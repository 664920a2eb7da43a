package dev.mighty.mailbox.tck;

import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterMethod;

import dev.mighty.mailbox.rs.MailboxPublisher;

/**
 * {@code PublisherVerification} of {@link MailboxPublisher} over an MPSC {@code Mailbox<Long>} of
 * {@link Tck#CAPACITY}; subclasses choose the batch size and how the mailbox is fed.
 *
 * <p>{@code createPublisher(n)}: a mailbox that delivers exactly {@code n} elements {@code 0 .. n-1} and is then
 * closed: sent up front when they fit, or by a live producer thread that parks while the mailbox is full (so
 * the publisher's demand, not the producer, sets the pace); see {@link MailboxWorkers.Feed}. The publisher
 * completes after the {@code n}-th.
 * {@code createFailedPublisher()}: a mailbox closed exceptionally before anyone subscribes; having nothing to drain,
 * the publisher signals {@code onSubscribe} then {@code onError(cause)} at once, without demand (§1.4, §1.9).
 */
public abstract class AbstractMailboxPublisherVerification extends PublisherVerification<Long> {
    private final int batchSize;
    private final MailboxWorkers.Feed feed;
    private final MailboxWorkers workers = new MailboxWorkers();

    AbstractMailboxPublisherVerification(int batchSize, MailboxWorkers.Feed feed) {
        super(Tck.environment(), Tck.PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS);
        this.batchSize = batchSize;
        this.feed = feed;
    }

    @Override
    public Publisher<Long> createPublisher(long elements) {
        return new MailboxPublisher<>(workers.longs(elements, feed), batchSize);
    }

    @Override
    public Publisher<Long> createFailedPublisher() {
        return new MailboxPublisher<>(MailboxWorkers.<Long>failed(), batchSize);
    }

    /**
     * Any finite stream: {@code createPublisher(n)} serves every {@code n < Long.MAX_VALUE} from a live producer, and
     * completes after it. The TCK's largest request is {@code Integer.MAX_VALUE} elements (§3.17), cancelled early.
     */
    @Override
    public long maxElementsFromPublisher() {
        return Long.MAX_VALUE - 1;
    }

    /**
     * One, the TCK's strictest bound, although delivery is synchronous (on the requester's or a producer's thread):
     * the drain is trampolined through a WIP counter, so a {@code request} made inside {@code onNext} only adds
     * demand for the running drain and never nests another {@code onNext} (§3.3).
     */
    @Override
    public long boundedDepthOfOnNextAndRequestRecursion() {
        return 1;
    }

    @AfterMethod(alwaysRun = true)
    public void stopWorkers() throws InterruptedException {
        workers.stopAll();
    }
}

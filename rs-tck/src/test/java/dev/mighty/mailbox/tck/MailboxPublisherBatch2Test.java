package dev.mighty.mailbox.tck;

import org.testng.annotations.Test;

/**
 * {@code MailboxPublisher} with batch size 2: demand is served in receives of at most 2, so every request of the
 * TCK spans several batches and the drain loop's per-batch demand accounting is exercised. Fed up front: the
 * elements are in the mailbox, and the mailbox closed, before the publisher is created (when they fit).
 */
@Test
public final class MailboxPublisherBatch2Test extends AbstractMailboxPublisherVerification {
    public MailboxPublisherBatch2Test() {
        super(2, MailboxWorkers.Feed.UP_FRONT);
    }
}

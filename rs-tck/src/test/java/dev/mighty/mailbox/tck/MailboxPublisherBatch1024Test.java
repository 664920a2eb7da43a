package dev.mighty.mailbox.tck;

import org.testng.annotations.Test;

/**
 * {@code MailboxPublisher} with batch size 1024, larger than the mailbox ({@link Tck#CAPACITY}): a batch is bounded by
 * demand and by what is in the mailbox, never by the batch size.
 */
@Test
public final class MailboxPublisherBatch1024Test extends AbstractMailboxPublisherVerification {
    public MailboxPublisherBatch1024Test() {
        super(1024);
    }
}

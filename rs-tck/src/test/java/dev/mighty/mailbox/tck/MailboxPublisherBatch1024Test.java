package dev.mighty.mailbox.tck;

import org.testng.annotations.Test;

/**
 * {@code MailboxPublisher} with batch size 1024, larger than the mailbox ({@link Tck#CAPACITY}): a batch is bounded by
 * demand and by what is in the mailbox, never by the batch size. Fed live: a producer thread races every
 * subscription, so the publisher waits on an empty mailbox, is woken by a send and completes on a close made by
 * another thread (and §3.13 is checked while a producer still holds the mailbox).
 */
@Test
public final class MailboxPublisherBatch1024Test extends AbstractMailboxPublisherVerification {
    public MailboxPublisherBatch1024Test() {
        super(1024, MailboxWorkers.Feed.LIVE);
    }
}

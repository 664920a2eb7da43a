package dev.mighty.mailbox.tck;

import org.testng.annotations.Test;

/**
 * {@code MailboxSubscriber} into a mailbox of capacity 2: two {@code onNext}s fill it, so further demand exists only
 * because the puppet's {@code triggerRequest} receives from the mailbox, and the subscriber, woken by that receive,
 * reserves and requests again from the consumer's (TestNG) thread.
 */
@Test
public final class MailboxSubscriberCapacity2WhiteboxTest extends AbstractMailboxSubscriberWhiteboxVerification {
    public MailboxSubscriberCapacity2WhiteboxTest() {
        super(2);
    }
}

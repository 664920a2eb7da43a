package dev.mighty.mailbox.tck;

import org.testng.annotations.Test;

/**
 * {@code MailboxSubscriber} into a mailbox of {@link Tck#CAPACITY}: its first request covers every element a TCK
 * test sends, so this checks the signal handling (§2.5, §2.8, §2.13, cancel on close) with room to spare.
 */
@Test
public final class MailboxSubscriberWhiteboxTest extends AbstractMailboxSubscriberWhiteboxVerification {
    public MailboxSubscriberWhiteboxTest() {
        super(Tck.CAPACITY);
    }
}

package dev.mighty.mailbox.tck;

import java.nio.ByteBuffer;

import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterMethod;
import org.testng.annotations.Test;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.rs.MailboxPublisher;

/**
 * {@code MailboxPublisher} over a {@link FrameMailbox}, the slab path: elements are {@link MessageFrame}s, sent by
 * the producer through the zero-garbage {@code send(kind, correlationId, ByteBuffer)} from one reused buffer.
 * Frame {@code i} has kind {@code i % 4} and correlation id {@code i}; its payload is {@code i} as 8 bytes, and every
 * fourth frame carries {@link #SPILLED_PAYLOAD} bytes, more than {@link FrameMailbox#INLINE_PAYLOAD}, so the spill
 * buffers are exercised too. Batch size 8, fed up front. Otherwise as {@link AbstractMailboxPublisherVerification}.
 */
@Test
public final class FrameMailboxPublisherTest extends PublisherVerification<MessageFrame> {
    private static final int BATCH_SIZE = 8;
    private static final int SPILLED_PAYLOAD = 2 * FrameMailbox.INLINE_PAYLOAD;

    private final MailboxWorkers workers = new MailboxWorkers();

    public FrameMailboxPublisherTest() {
        super(Tck.environment(), Tck.PUBLISHER_REFERENCE_GC_TIMEOUT_MILLIS);
    }

    @Override
    public Publisher<MessageFrame> createPublisher(long elements) {
        final FrameMailbox mailbox = Mailboxes.frames(Tck.CAPACITY);
        final ByteBuffer payload = ByteBuffer.allocate(SPILLED_PAYLOAD);
        workers.fill(mailbox, elements, MailboxWorkers.Feed.UP_FRONT, (index, park) -> {
            payload.clear().putLong(0, index).limit(index % 4 == 3 ? SPILLED_PAYLOAD : Long.BYTES);
            final int kind = (int) (index % 4);
            if (park) {
                mailbox.send(kind, index, payload);
                return true;
            }
            return mailbox.trySend(kind, index, payload);
        });
        return new MailboxPublisher<>(mailbox, BATCH_SIZE);
    }

    @Override
    public Publisher<MessageFrame> createFailedPublisher() {
        final FrameMailbox mailbox = Mailboxes.frames(Tck.CAPACITY);
        mailbox.closeExceptionally(new RuntimeException("closed exceptionally before subscribe (TCK)"));
        return new MailboxPublisher<>(mailbox, BATCH_SIZE);
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

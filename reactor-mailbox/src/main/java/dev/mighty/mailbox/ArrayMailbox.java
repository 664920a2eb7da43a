package dev.mighty.mailbox;

import static dev.mighty.mailbox.internal.RefArray.laRefElement;
import static dev.mighty.mailbox.internal.RefArray.soRefElement;
import static dev.mighty.mailbox.internal.RefArray.spRefElement;

import dev.mighty.mailbox.internal.ConsumerRole;
import dev.mighty.mailbox.internal.MailboxRing;

/**
 * The reference mailbox: a {@link MailboxRing} over an {@code Object[]} of {@code capacity} slots, a null slot
 * meaning "not published". Many producers, or one when built single-producer (the claim is the same CAS;
 * the single-producer contract only lets the caller rely on one sender's order). One consumer.
 *
 * @param <T> the message type
 */
final class ArrayMailbox<T> extends MailboxRing<T> implements Mailbox<T> {
    /** The placeholder of {@link #publishSkip}. */
    private static final Object SKIP = new Object();

    private final Object[] buffer;

    ArrayMailbox(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
        this.buffer = new Object[this.capacity];
    }

    @Override
    protected void validate(T msg) {
        // any non-null reference is a message
    }

    @Override
    protected void publishQuiet(long index, T msg) {
        soRefElement(buffer, (int) (index & mask), msg); // pairs with laRefElement in poll() and isPublished()
    }

    @Override
    protected void publishSkip(long index) {
        soRefElement(buffer, (int) (index & mask), SKIP);
        signalConsumer();
    }

    @Override
    protected boolean isPublished(long index) {
        return laRefElement(buffer, (int) (index & mask)) != null;
    }

    @Override
    @SuppressWarnings("unchecked")
    public T poll(ConsumerRole owner) {
        final Object[] buffer = this.buffer;
        long cIndex = lpConsumerIndex();
        for (;;) {
            final int offset = (int) (cIndex & mask);
            final Object e = laRefElement(buffer, offset); // pairs with soRefElement in publish()
            if (e == null) {
                return null;
            }
            spRefElement(buffer, offset, null);
            soConsumerIndex(++cIndex); // frees the slot: pairs with lvConsumerIndex in claim()
            if (e != SKIP) {
                return (T) e;
            }
            if (!afterSkip(owner)) {
                return null; // cancelled by a wake-up the skip ran: what follows is the next consumer's
            }
        }
    }
}

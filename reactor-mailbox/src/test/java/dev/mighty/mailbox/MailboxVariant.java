package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mailbox variants every contract and concurrency test runs against (JCTools {@code QueueSanityTest}
 * style). Each variant turns a {@code long} id into a message and back, so a test can check order and
 * exactly-once delivery without knowing the message type. A frame carries its id as correlation id, the
 * producer part of the id as kind, and a payload derived from the id whose length (0 .. 96 bytes) covers
 * both the inline and the spilled storage; {@link #id} verifies all of it.
 */
enum MailboxVariant {
    /** {@link Mailboxes#bounded(int)}: many producers. */
    MPSC(true, Mailboxes.MAX_CAPACITY) {
        @Override
        Mailbox<Object> create(int capacity) {
            return Mailboxes.bounded(capacity);
        }
    },
    /** {@code builder().singleProducer()}: one producer at a time. */
    SPSC(false, Mailboxes.MAX_CAPACITY) {
        @Override
        Mailbox<Object> create(int capacity) {
            return Mailboxes.builder().capacity(capacity).singleProducer().build();
        }
    },
    /** {@link Mailboxes#frames(int)}: the slab of 64-byte slots; messages are {@link MessageFrame}s. */
    FRAMES(true, FrameMailbox.MAX_CAPACITY) {
        @Override
        @SuppressWarnings("unchecked") // every message this variant makes is a MessageFrame
        Mailbox<Object> create(int capacity) {
            return (Mailbox<Object>) (Mailbox<?>) Mailboxes.frames(capacity);
        }

        @Override
        Object message(long id) {
            return MessageFrame.of(kindOf(id), id, payloadOf(id));
        }

        @Override
        long id(Object msg) {
            final MessageFrame frame = (MessageFrame) msg;
            final long id = frame.correlationId();
            assertThat(frame.kind()).as("kind of frame %d", id).isEqualTo(kindOf(id));
            final byte[] payload = new byte[frame.payloadLength()];
            frame.payload().get(payload);
            assertThat(payload).as("payload of frame %d", id).isEqualTo(payloadOf(id));
            return id;
        }
    };

    /** The largest payload {@link #payloadOf} makes: over {@link FrameMailbox#INLINE_PAYLOAD}, so some spill. */
    static final int MAX_TEST_PAYLOAD = 96;

    private final boolean multiProducer;
    private final int maxCapacity;

    MailboxVariant(boolean multiProducer, int maxCapacity) {
        this.multiProducer = multiProducer;
        this.maxCapacity = maxCapacity;
    }

    /** @return a new mailbox of this variant; its factory validates {@code capacity} */
    abstract Mailbox<Object> create(int capacity);

    /** @return the message that carries {@code id} */
    Object message(long id) {
        return id;
    }

    /** @return the id carried by {@code msg}, after checking everything else it carries */
    long id(Object msg) {
        return (Long) msg;
    }

    /** @return whether several threads may send at once */
    boolean multiProducer() {
        return multiProducer;
    }

    /** @return the largest capacity this variant's factory accepts */
    int maxCapacity() {
        return maxCapacity;
    }

    /** @return the id of message {@code seq} of producer {@code producer} */
    static long id(int producer, long seq) {
        return (long) producer << 32 | seq;
    }

    static int producerOf(long id) {
        return (int) (id >>> 32);
    }

    static long seqOf(long id) {
        return id & 0xFFFF_FFFFL;
    }

    static int kindOf(long id) {
        return producerOf(id);
    }

    /** @return the payload of frame {@code id}: {@code id % 97} bytes, each a function of id and position */
    static byte[] payloadOf(long id) {
        final byte[] payload = new byte[(int) Long.remainderUnsigned(id, MAX_TEST_PAYLOAD + 1)];
        fillPayload(id, payload, payload.length);
        return payload;
    }

    /** Writes the first {@code length} bytes of the payload of frame {@code id} into {@code dst}. */
    static void fillPayload(long id, byte[] dst, int length) {
        for (int i = 0; i < length; i++) {
            dst[i] = (byte) (id * 31 + i * 7);
        }
    }
}

package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import dev.mighty.mailbox.FrameView;

/**
 * Checks a stream of {@code (producer, seq)} messages where each producer sends 0, 1, 2, ... in order: a
 * message below the next expected one is a duplicate, one above it a gap (lost or reordered). At the end,
 * {@link #assertExactlyOnceInOrder} proves every sent message arrived exactly once, in per-producer order.
 * Used by one consumer at a time (the caller's hand-off gives the happens-before edge).
 */
final class SequenceChecker {
    private final long[] next;
    private final List<String> violations = new ArrayList<>();
    private long received;

    SequenceChecker(int producers) {
        this.next = new long[producers];
    }

    /** A reference message: {@code producer << 40 | seq}. */
    static Long message(int producer, long seq) {
        return ((long) producer << 40) | seq;
    }

    void accept(Long message) {
        accept((int) (message >>> 40), message & ((1L << 40) - 1));
    }

    void accept(int producer, long seq) {
        received++;
        if (producer < 0 || producer >= next.length) {
            violation("unknown producer " + producer + " seq " + seq);
            return;
        }
        final long expected = next[producer];
        if (seq < expected) {
            violation("duplicate or out of order: producer " + producer + " seq " + seq + " after " + (expected - 1));
        } else if (seq > expected) {
            violation("gap: producer " + producer + " seq " + seq + " expected " + expected);
        }
        next[producer] = Math.max(expected, seq + 1);
    }

    /** Frames: kind = producer, correlation id = seq, payload = {@link #payload}; checks the payload bytes too. */
    void accept(FrameView view) {
        final int producer = view.kind();
        final long seq = view.correlationId();
        final int length = view.payloadLength();
        if (length != payloadLength(seq)) {
            violation("torn frame: producer " + producer + " seq " + seq + " length " + length);
        } else if (length > 0) {
            final byte[] bytes = new byte[length];
            view.getPayload(bytes, 0);
            for (int i = 0; i < length; i++) {
                if (bytes[i] != payloadByte(producer, seq, i)) {
                    violation("torn payload: producer " + producer + " seq " + seq + " byte " + i);
                    break;
                }
            }
        }
        accept(producer, seq);
    }

    static int payloadLength(long seq) {
        return (int) (seq % 97); // inline (<= 48) and spilled (49 .. 96) payloads
    }

    static byte payloadByte(int producer, long seq, int i) {
        return (byte) (producer * 31 + seq * 7 + i);
    }

    /** Fills {@code buffer} (cleared) with the payload of {@code (producer, seq)} and flips it. */
    static ByteBuffer payload(ByteBuffer buffer, int producer, long seq) {
        buffer.clear();
        final int length = payloadLength(seq);
        for (int i = 0; i < length; i++) {
            buffer.put(payloadByte(producer, seq, i));
        }
        return buffer.flip();
    }

    void violation(String what) {
        if (violations.size() < 20) {
            violations.add(what);
        }
    }

    long received() {
        return received;
    }

    long next(int producer) {
        return next[producer];
    }

    List<String> violations() {
        return violations;
    }

    /** Every producer's first {@code sent[p]} messages arrived exactly once and in order, and nothing else. */
    void assertExactlyOnceInOrder(long... sent) {
        assertThat(violations).as("duplicates, gaps, torn frames").isEmpty();
        for (int p = 0; p < next.length; p++) {
            assertThat(next[p]).as("messages received from producer " + p).isEqualTo(sent[p]);
        }
    }
}

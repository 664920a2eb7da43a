package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.nio.ByteBuffer;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;

/**
 * The batched frame send ({@code FrameMailbox.trySendMany(FrameBatch, ..)}: one claim CAS for a run, then the
 * frames written back to back) against {@code close()} and against a concurrent consumer. Frame {@code i} of a run
 * has correlation id {@code i + 1} and a 40-byte inline payload of the byte {@code i + 1}; it stands for bit
 * {@code 1 << i} in the masks.
 */
public final class FrameBatchStress {
    static final int RUN = 3;
    static final int PAYLOAD = 40;

    private FrameBatchStress() {
    }

    static FrameBatch batch() {
        final FrameBatch batch = new FrameBatch(RUN);
        for (int i = 0; i < RUN; i++) {
            final ByteBuffer payload = ByteBuffer.allocate(PAYLOAD);
            for (int b = 0; b < PAYLOAD; b++) {
                payload.put(b, (byte) (i + 1));
            }
            batch.add(7, i + 1, payload);
        }
        return batch;
    }

    /** Records the frames it sees as a mask, and -100 for a frame whose header or payload is not what was sent. */
    static final class MaskHandler implements FrameHandler {
        final byte[] copy = new byte[PAYLOAD];
        int mask;

        @Override
        public void onFrame(FrameView frame) {
            final int id = (int) frame.correlationId();
            boolean whole = frame.kind() == 7 && frame.payloadLength() == PAYLOAD && id >= 1 && id <= RUN;
            if (whole) {
                frame.getPayload(copy, 0);
                for (byte b : copy) {
                    whole &= b == id;
                }
            }
            mask = whole ? mask | 1 << (id - 1) : -100;
        }
    }

    /** A run of 3 into an empty frame mailbox of 4 vs {@code close()}; r2 = mask received, after the end of stream. */
    @JCStressTest
    @Outcome(id = "3, 7", expect = ACCEPTABLE,
            desc = "the run's claim CAS came before the close's → all 3 admitted → all received before the end")
    @Outcome(id = "-1, 0", expect = ACCEPTABLE,
            desc = "the close set CLOSED first → MailboxClosedException → none admitted")
    @Outcome(id = {"1, 1", "2, 3"}, expect = FORBIDDEN, desc = "part of the run admitted: split by the close")
    @Outcome(id = "3, 0", expect = FORBIDDEN, desc = "admitted, then lost: the stream ended without the run")
    @Outcome(expect = FORBIDDEN, desc = "a torn frame, what was received does not match the answer, or no end")
    @State
    public static class RunVsClose {
        final FrameMailbox mailbox = Mailboxes.frames(4);
        final FrameBatch batch = batch();
        final MaskHandler handler = new MaskHandler();

        @Actor
        public void send(II_Result r) {
            try {
                r.r1 = mailbox.trySendMany(batch, 0, RUN);
            } catch (MailboxClosedException e) {
                r.r1 = Fixtures.CLOSED;
            }
        }

        @Actor
        public void close() {
            mailbox.close();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            mailbox.tryRecvFrames(handler, Integer.MAX_VALUE);
            r.r2 = mailbox.isTerminated() ? handler.mask : -2;
        }
    }

    /**
     * A run of 3 vs a consumer's one {@code tryRecvFrames}: the consumer sees a prefix of the run, each frame whole
     * (its header and payload stores happen-before the status store it reads); r1 = the prefix's mask, r2 = the
     * mask of what the arbiter then finds (the rest).
     */
    @JCStressTest
    @Outcome(id = "0, 7", expect = ACCEPTABLE, desc = "the consumer looked before the first frame was published")
    @Outcome(id = "1, 6", expect = ACCEPTABLE, desc = "the consumer took the first frame, the rest came after")
    @Outcome(id = "3, 4", expect = ACCEPTABLE, desc = "the consumer took two frames")
    @Outcome(id = "7, 0", expect = ACCEPTABLE, desc = "the consumer took the whole run")
    @Outcome(expect = FORBIDDEN, desc = "a torn frame (-100), a frame out of order, lost or received twice")
    @State
    public static class RunVsConsumer {
        final FrameMailbox mailbox = Mailboxes.frames(4);
        final FrameBatch batch = batch();
        final MaskHandler handler = new MaskHandler();

        @Actor
        public void send() {
            if (mailbox.trySendMany(batch, 0, RUN) != RUN) {
                throw new AssertionError("an empty mailbox of 4 refused a run of 3");
            }
        }

        @Actor
        public void receive(II_Result r) {
            mailbox.tryRecvFrames(handler, Integer.MAX_VALUE);
            r.r1 = handler.mask;
        }

        @Arbiter
        public void arbiter(II_Result r) {
            final MaskHandler rest = new MaskHandler();
            mailbox.tryRecvFrames(rest, Integer.MAX_VALUE);
            r.r2 = rest.mask;
        }
    }
}

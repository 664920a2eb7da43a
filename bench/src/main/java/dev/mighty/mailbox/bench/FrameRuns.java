package dev.mighty.mailbox.bench;

import java.nio.ByteBuffer;

import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameMailbox;

/**
 * The producer loop of the batched frame rows (the CLI's {@code batched_send_frame}, JMH's
 * {@code frames_batch_spin}): frames {@code 0 .. n-1} in runs of {@code run.maxFrames()}, each run refilled into the
 * reused batch, sent with {@code trySendMany} and, for what did not fit, {@code sendMany}. Producer thread only.
 */
public final class FrameRuns {
    private FrameRuns() {
    }

    /** Sends {@code n} frames of {@code kind}, correlation ids {@code 0 .. n-1}, each carrying {@code payload}. */
    public static void send(FrameMailbox mailbox, FrameBatch run, int kind, ByteBuffer payload, int n)
            throws InterruptedException {
        final int length = run.maxFrames();
        for (int i = 0; i < n; ) {
            final int k = Math.min(length, n - i);
            run.clear();
            for (int j = 0; j < k; j++) {
                run.add(kind, i + j, payload);
            }
            final int sent = mailbox.trySendMany(run, 0, k);
            if (sent < k) {
                mailbox.sendMany(run, sent, k);
            }
            i += k;
        }
    }
}

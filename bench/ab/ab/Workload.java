package ab;

import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongUnaryOperator;

import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;

/**
 * The workload both builds run: one producer thread (kept across iterations, parked between them) and the caller
 * as consumer, capacity 1024. {@code frames}: {@code FrameMailbox.trySend(kind, id, ByteBuffer)} (then
 * {@code send}) / {@code recvFrames}; {@code raw}: {@code Mailbox.trySend} (then {@code send}) / {@code recvMany}.
 * {@link #applyAsLong} runs one iteration of {@code n} messages and returns its nanoseconds. Compiled against the
 * public API only, so it runs unchanged on any build of reactor-mailbox.
 */
public final class Workload implements LongUnaryOperator, FrameHandler {
    final boolean frames;
    final FrameMailbox fm;
    final Mailbox<Object> mb;
    final ByteBuffer buf;
    volatile long requested;
    volatile int msgs;
    volatile Thread consumer;
    long expected;
    long sum;
    final Thread producer;
    static final Object M = new Object();

    public Workload(String kind, int payload) {
        frames = kind.equals("frames");
        fm = frames ? Mailboxes.frames(1024) : null;
        mb = frames ? null : Mailboxes.bounded(1024);
        buf = ByteBuffer.allocate(payload);
        producer = new Thread(this::produce);
        producer.setDaemon(true);
        producer.start();
    }

    void produce() {
        long done = 0;
        try {
            for (;;) {
                while (requested == done) {
                    LockSupport.park(this);
                }
                done++;
                final int n = msgs;
                if (frames) {
                    for (int i = 0; i < n; i++) {
                        if (!fm.trySend(7, i, buf)) {
                            fm.send(7, i, buf);
                        }
                    }
                } else {
                    for (int i = 0; i < n; i++) {
                        if (!mb.trySend(M)) {
                            mb.send(M);
                        }
                    }
                }
            }
        } catch (InterruptedException e) {
            // end
        }
    }

    @Override
    public void onFrame(FrameView f) {
        sum += f.correlationId();
    }

    @Override
    public long applyAsLong(long n) {
        try {
            msgs = (int) n;
            final long t0 = System.nanoTime();
            requested = requested + 1;
            LockSupport.unpark(producer);
            int got = 0;
            while (got < n) {
                got += frames ? fm.recvFrames(this, (int) n - got) : mb.recvMany(e -> sum++, (int) n - got);
            }
            return System.nanoTime() - t0;
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }
}

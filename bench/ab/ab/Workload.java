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
 * {@link #applyAsLong} runs one iteration of {@code n} messages and returns its nanoseconds, from the moment the
 * producer woke (so the unpark latency, tens of microseconds on a shared VM, is not counted) to the last receive. Compiled against the
 * public API only, so it runs unchanged on any build of reactor-mailbox.
 *
 * <p>{@code -Dab.lone=MICROS}: each iteration is one message, sent {@code MICROS} after the producer woke, so the
 * consumer has been waiting in its receive that long; the iteration's time is then the latency of a lone message,
 * from just before its send to the return of the receive that took it.
 */
public final class Workload implements LongUnaryOperator, FrameHandler {
    final boolean frames;
    final boolean local = Boolean.getBoolean("ab.local");
    /** {@code ab.lone}: one message per iteration, sent after the consumer has waited this many microseconds. */
    final long loneMicros = Long.getLong("ab.lone", -1L);
    final FrameMailbox fm;
    final Mailbox<Object> mb;
    final ByteBuffer buf;
    volatile long requested;
    volatile int msgs;
    /** When the producer woke for the current iteration: the iteration is timed from here (not from the unpark). */
    volatile long startNanos;
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
        if (!local) {
            producer.start();
        }
    }

    void produce() {
        long done = 0;
        try {
            for (;;) {
                while (requested == done) {
                    LockSupport.park(this);
                }
                done++;
                if (loneMicros >= 0) {
                    // the consumer is in its receive by now: spinning, yielding or parked, as after any quiet spell
                    final long until = System.nanoTime() + loneMicros * 1000L;
                    while (System.nanoTime() - until < 0) {
                        Thread.onSpinWait();
                    }
                }
                startNanos = System.nanoTime();
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

    /**
     * {@code local}: the same sends and receives on the calling thread alone (send 64, receive them), no
     * cross-core traffic: the instruction cost of the path, nearly free of the machine's mode.
     */
    private long local(long n) {
        final long t0 = System.nanoTime();
        for (int i = 0; i < n; i += 64) {
            final int k = (int) Math.min(64, n - i);
            for (int j = 0; j < k; j++) {
                if (frames) {
                    fm.trySend(7, i + j, buf);
                } else {
                    mb.trySend(M);
                }
            }
            if (frames) {
                fm.tryRecvFrames(this, k);
            } else {
                mb.tryRecvMany(e -> sum++, k);
            }
        }
        return System.nanoTime() - t0;
    }

    @Override
    public long applyAsLong(long n) {
        if (local) {
            return local(n);
        }
        if (loneMicros >= 0) {
            n = 1;
        }
        try {
            msgs = (int) n;
            requested = requested + 1;
            LockSupport.unpark(producer);
            int got = 0;
            while (got < n) {
                got += frames ? fm.recvFrames(this, (int) n - got) : mb.recvMany(e -> sum++, (int) n - got);
            }
            // ends after the last receive; the producer's startNanos was written before its first send, so the
            // receive of that send (acquire) makes it visible here
            return System.nanoTime() - startNanos;
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }
}

package dev.mighty.mailbox.bench.jmh;

import dev.mighty.mailbox.FrameMailbox;

/**
 * A {@link FrameMailbox} of {@link OneToOneState#CAPACITY} between the producer and the benchmark thread; the
 * subclasses choose how the producer sends and how {@link #drainNow()} receives. A producer failure closes the
 * mailbox exceptionally, so the benchmark thread's {@code recvFrames} throws instead of waiting.
 */
public abstract class FrameMailboxState extends OneToOneState {
    FrameMailbox mailbox;
    final Sink sink = new Sink();

    @Override
    protected void producerFailed(Throwable t) {
        mailbox.closeExceptionally(t);
    }

    /** Closes the mailbox and prints its stats (refused sends, parks, high-water) with the trial's output. */
    @Override
    protected void close() {
        mailbox.close();
        System.out.println("frame mailbox stats: " + mailbox.stats());
    }

    /**
     * One operation of the slab path's consumer: {@code recvFrames} until {@link OneToOneState#MESSAGES} frames
     * are read (throws once the producer failed, {@code closeExceptionally}); returns the frame-id sum.
     */
    static long recvFrames(FrameMailboxState s) throws InterruptedException {
        s.request();
        final FrameMailbox mailbox = s.mailbox;
        final Sink sink = s.sink;
        int n = 0;
        while (n < MESSAGES) {
            n += mailbox.recvFrames(sink, MESSAGES - n);
        }
        s.received(n);
        return sink.frameIds;
    }
}

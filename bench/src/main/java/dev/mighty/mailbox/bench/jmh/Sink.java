package dev.mighty.mailbox.bench.jmh;

import java.util.function.Consumer;

import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameView;
import org.jctools.queues.MessagePassingQueue;

/**
 * Receives messages in the benchmarks: keeps the last one (and sums the frame ids it reads), so no receive is
 * dead code. The benchmark returns {@link #last} to JMH's blackhole. One thread at a time.
 */
final class Sink implements Consumer<Object>, MessagePassingQueue.Consumer<Object>, FrameHandler {
    Object last;
    long frameIds;

    @Override
    public void accept(Object e) {
        last = e;
    }

    @Override
    public void onFrame(FrameView frame) {
        frameIds += frame.correlationId();
    }
}

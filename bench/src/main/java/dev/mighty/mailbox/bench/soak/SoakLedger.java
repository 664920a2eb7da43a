package dev.mighty.mailbox.bench.soak;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.HdrHistogram.Histogram;

/**
 * The soak's books: every message delivered, by whichever face, goes through {@link #accept}. Each producer sends
 * 0, 1, 2, ... in order, so per producer a message below the next expected sequence is a duplicate, one above
 * it is out of order (it skipped some), and at the end {@code sent - (received - duplicated)} were lost.
 *
 * <p>Threads: deliveries are serial by the mailbox's contract (one consumer at a time, each hand-over a
 * happens-before edge), so the counters are plain. That contract is checked, not assumed: a delivery that
 * overlaps another is counted in {@link #overlaps()} (and fails the run). Readers on other threads (the progress
 * line) read the volatile {@link #received} and tolerate stale figures.
 */
final class SoakLedger {
    /** What a producer sends: who, which, and when (for the latency). */
    record Message(int producer, long seq, long sentNanos) {
    }

    private final long[] next;
    private final Histogram latency = new Histogram(1, TimeUnit.HOURS.toNanos(1), 3);
    private final AtomicInteger inside = new AtomicInteger();
    private volatile long received;
    private volatile long duplicated;
    private volatile long outOfOrder;
    private volatile long overlaps;
    private volatile long beyondDemand;
    /** Self-test: pretend to lose every n-th delivery (0: never). Proves the books catch a loss. */
    private final long dropEvery;

    SoakLedger(int producers, long dropEvery) {
        this.next = new long[producers];
        this.dropEvery = dropEvery;
    }

    /** Books one delivery. Called by the consumer of the moment; serial by contract (checked). */
    void accept(Message m) {
        if (inside.getAndIncrement() != 0) {
            overlaps++; // two consumers at once: the one-consumer contract is broken
        }
        try {
            final long n = received + 1;
            if (dropEvery > 0 && n % dropEvery == 0) {
                received = n;
                return; // self-test: this delivery is "lost"
            }
            final long expected = next[m.producer()];
            if (m.seq() < expected) {
                duplicated++;
            } else {
                if (m.seq() > expected) {
                    outOfOrder++;
                }
                next[m.producer()] = m.seq() + 1;
            }
            latency.recordValue(Math.min(Math.max(0L, System.nanoTime() - m.sentNanos()),
                    latency.getHighestTrackableValue()));
            received = n;
        } finally {
            inside.getAndDecrement();
        }
    }

    /** Books an {@code onNext} a subscriber did not ask for (§1.1). */
    void beyondDemand() {
        beyondDemand++;
    }

    long received() {
        return received;
    }

    long duplicated() {
        return duplicated;
    }

    long outOfOrder() {
        return outOfOrder;
    }

    long overlaps() {
        return overlaps;
    }

    long beyondDemandCount() {
        return beyondDemand;
    }

    /** Messages sent but never delivered. Exact once everything is drained. */
    long lost(long sent) {
        return sent - (received - duplicated) + (dropEvery > 0 ? received / dropEvery : 0);
    }

    /** Read once deliveries have stopped (after the final drain). */
    Histogram latency() {
        return latency;
    }

    /** A racy snapshot for the progress line; exact once deliveries have stopped. */
    long maxLatencyNanos() {
        return latency.getMaxValue();
    }
}

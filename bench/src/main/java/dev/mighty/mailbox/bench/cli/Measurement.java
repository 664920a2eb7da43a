package dev.mighty.mailbox.bench.cli;

import org.HdrHistogram.Histogram;

/**
 * The measured iterations of one workload: a histogram of iteration times (ns) and the bytes both threads
 * allocated during them. Producer thread only.
 */
final class Measurement {
    final Workloads.Entry entry;
    final Histogram histogram = new Histogram(3);
    final int messagesPerIteration;
    long allocatedBytes = -1L;
    String stats;
    /** Null for the JVM's rows; for an out-of-process comparator ({@code --native}), its toolchain and library. */
    String outOfProcess;

    Measurement(Workloads.Entry entry, int messagesPerIteration) {
        this.entry = entry;
        this.messagesPerIteration = messagesPerIteration;
    }

    String name() {
        return entry.name();
    }

    void record(long nanos, long allocated) {
        histogram.recordValue(Math.max(1L, nanos));
        if (allocated >= 0) {
            allocatedBytes = Math.max(0L, allocatedBytes) + allocated;
        }
    }

    double medianNanos() {
        return histogram.getValueAtPercentile(50.0);
    }

    double p95Nanos() {
        return histogram.getValueAtPercentile(95.0);
    }

    double p99Nanos() {
        return histogram.getValueAtPercentile(99.0);
    }

    /** @return messages per second at the median iteration time */
    double msgsPerSecond() {
        return messagesPerIteration * 1e9 / medianNanos();
    }

    double nanosPerMessage() {
        return medianNanos() / messagesPerIteration;
    }

    /** @return p95 / median: 1.0 is a perfectly steady row */
    double spread() {
        return p95Nanos() / medianNanos();
    }

    /** @return bytes allocated per message by both threads, or -1 when the JVM cannot tell */
    double bytesPerMessage() {
        final long n = histogram.getTotalCount() * messagesPerIteration;
        return allocatedBytes < 0 || n == 0 ? -1 : (double) allocatedBytes / n;
    }
}

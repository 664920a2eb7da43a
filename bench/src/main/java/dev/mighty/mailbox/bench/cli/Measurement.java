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
    /** CPU time of the harness consumer thread during the measured iterations; -1 when the JVM cannot tell. */
    long consumerCpuNanos = -1L;
    /** CPU time of the row's own delivering thread (executor, scheduler) over the measured phase, or -1. */
    long delivererCpuNanos = -1L;
    /** Whether onNext ran on the producer thread (trampoline): its CPU is in the producer, not counted. */
    boolean deliveredOnProducer;
    /** CPU time of the harness producer thread in the measured iterations' {@code produce}; -1 when unknown. */
    long producerCpuNanos = -1L;
    /**
     * CPU time of the row's own threads (executor, scheduler worker, helper emitters; for the Pekko rows the thread
     * that delivered last) over the whole measured phase, their waits between iterations included; -1 if unknown.
     */
    long rowThreadsCpuNanos = -1L;
    /** The row's own threads counted in {@link #rowThreadsCpuNanos}. */
    int rowThreads;
    /** Whether the harness consumer thread receives (its CPU is the row's) or only waits (it is the harness's). */
    boolean harnessConsumerCounted = true;
    /** Wake-ups during the measured phase (mailbox rows), or -1. */
    long wakeups = -1L;
    /** Null for the JVM's rows; for an out-of-process comparator ({@code --native}), its toolchain and library. */
    String outOfProcess;

    Measurement(Workloads.Entry entry, int messagesPerIteration) {
        this.entry = entry;
        this.messagesPerIteration = messagesPerIteration;
    }

    String name() {
        return entry.name();
    }

    void record(long nanos, long allocated, long consumerCpu, long producerCpu) {
        histogram.recordValue(Math.max(1L, nanos));
        if (consumerCpu >= 0) {
            consumerCpuNanos = Math.max(0L, consumerCpuNanos) + consumerCpu;
        }
        if (producerCpu >= 0) {
            producerCpuNanos = Math.max(0L, producerCpuNanos) + producerCpu;
        }
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

    private long measuredMessages() {
        return histogram.getTotalCount() * messagesPerIteration;
    }

    /**
     * @return CPU nanoseconds per message of the thread that received: the row's own executor or scheduler
     *         thread over the measured phase if it has one, else the harness consumer thread during the
     *         iterations; -1 when onNext ran on the producer thread or the JVM cannot tell
     */
    double consumerCpuPerMessage() {
        final long n = measuredMessages();
        if (n == 0) {
            return -1;
        }
        if (delivererCpuNanos >= 0) {
            return delivererCpuNanos / (double) n; // the row's own thread; the harness thread only waited
        }
        if (deliveredOnProducer || consumerCpuNanos < 0) {
            return -1; // trampoline: onNext ran inside the producer's sends
        }
        return consumerCpuNanos / (double) n;
    }

    /**
     * @return CPU nanoseconds per message of every thread that does the row's work: the harness producer in
     *         {@code produce}, the harness consumer in {@code consume} when it receives (not when it only waits for
     *         the row's own thread), and the row's own threads over the measured phase; -1 when the JVM cannot tell
     *         or the row ran out of process
     */
    double cpuPerMessage() {
        final long n = measuredMessages();
        if (n == 0 || producerCpuNanos < 0 || (harnessConsumerCounted && consumerCpuNanos < 0)) {
            return -1;
        }
        return (producerCpuNanos + (harnessConsumerCounted ? consumerCpuNanos : 0L)
                + Math.max(0L, rowThreadsCpuNanos)) / (double) n;
    }

    /** @return threads counted in {@link #cpuPerMessage()}: the harness's that work for the row, and its own */
    int cpuThreads() {
        return 1 + (harnessConsumerCounted ? 1 : 0) + rowThreads;
    }

    /** @return mailbox wake-ups (parks and registrations, both sides) per 10 M messages, or -1 */
    double wakeupsPer10M() {
        final long n = measuredMessages();
        return wakeups < 0 || n == 0 ? -1 : wakeups * 1e7 / n;
    }
}

package dev.mighty.mailbox.bench;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The CPU-time registry: it sums the threads that joined it, only them, and never goes negative. */
class ThreadCpuTest {

    @Test
    @Timeout(30)
    void shouldSumTheCpuTimeOfTheRegisteredThreadsOnly() throws Exception {
        assumeTrue(ThreadCpu.supported(), "this JVM does not measure thread CPU time");
        final ThreadCpu registry = new ThreadCpu(Placement.unpinned());
        final AtomicBoolean stop = new AtomicBoolean();
        final CountDownLatch joined = new CountDownLatch(2);
        final Thread a = registry.factory("cpu-a", Placement.PRODUCER).newThread(() -> burn(joined, stop));
        final Thread b = registry.factory("cpu-b", Placement.CONSUMER).newThread(() -> burn(joined, stop));
        final Thread outsider = new Thread(() -> burn(new CountDownLatch(1), stop), "cpu-outsider");
        try {
            a.start();
            b.start();
            outsider.start();
            assertThat(joined.await(10, TimeUnit.SECONDS)).isTrue();
            final long first = registry.cpuNanos();
            Thread.sleep(200);
            final long second = registry.cpuNanos();

            assertThat(registry.threads()).containsExactlyInAnyOrder(a, b);
            assertThat(a.isDaemon()).isTrue();
            assertThat(first).isNotNegative();
            assertThat(second).isGreaterThanOrEqualTo(first);
            assertThat(second).as("two busy threads over 200 ms: some CPU was counted").isPositive();
            // the sum is exactly the registered threads' (the outsider burns too, but is not in it)
            final java.lang.management.ThreadMXBean bean = java.lang.management.ManagementFactory.getThreadMXBean();
            final long third = registry.cpuNanos();
            final long parts = bean.getThreadCpuTime(a.getId()) + bean.getThreadCpuTime(b.getId());
            assertThat(parts).isGreaterThanOrEqualTo(third);
            assertThat(third + bean.getThreadCpuTime(outsider.getId())).isGreaterThan(parts);
        } finally {
            stop.set(true);
            a.join(5_000);
            b.join(5_000);
            outsider.join(5_000);
        }
        assertThat(registry.cpuNanos()).as("ended threads count 0, never negative").isNotNegative();
    }

    @Test
    void shouldCountTheCallerOnceWhenItJoinsTwice() {
        final ThreadCpu registry = new ThreadCpu(Placement.unpinned());
        registry.join(Placement.PRODUCER);
        registry.join(Placement.PRODUCER);
        registry.add(Thread.currentThread());

        assertThat(registry.threads()).containsExactly(Thread.currentThread());
        assertThat(registry.cpuNanos()).isGreaterThanOrEqualTo(ThreadCpu.supported() ? 0L : -1L);
    }

    private static void burn(CountDownLatch started, AtomicBoolean stop) {
        started.countDown();
        long x = 0;
        while (!stop.get()) {
            x += System.nanoTime() & 7;
        }
        if (x == 42) {
            System.out.print("");
        }
    }
}

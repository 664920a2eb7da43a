package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;

import dev.mighty.mailbox.reactor.MailboxFluxAllocationTest.CountingFusedSubscriber;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Fuseable;
import reactor.core.publisher.Sinks;

/**
 * Guards "0 B/msg on our side" for {@link MailboxSinks}: {@code tryEmitNext} into the sink and the fused consumer
 * ({@link CountingFusedSubscriber}) polling on this thread, counted with the thread's allocation counter (not
 * timed). The JMH {@code -prof gc} figure of the 4-emitter rows lives in {@code bench/}. Messages are preallocated.
 */
@Timeout(300)
class MailboxSinksAllocationTest {
    private static final int CAPACITY = 1024;
    private static final int WARMUP_ROUNDS = 300;
    private static final int ROUNDS = 200;

    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getCurrentThreadAllocatedBytes();
    }

    @Test
    void shouldAllocateNothingPerMessageWhenEmittingIntoTheSinkAndPollingFused() {
        final Sinks.Many<Integer> sink = MailboxSinks.many(CAPACITY);
        final Integer[] messages = new Integer[CAPACITY];
        for (int i = 0; i < CAPACITY; i++) {
            messages[i] = 1_000 + i;
        }
        final CountingFusedSubscriber subscriber = new CountingFusedSubscriber();
        subscriber.deferred = true;
        sink.asFlux().subscribe(subscriber);
        assertThat(subscriber.mode).isEqualTo(Fuseable.ASYNC);
        final Runnable round = () -> {
            for (Integer m : messages) {
                if (sink.tryEmitNext(m) != Sinks.EmitResult.OK) {
                    throw new AssertionError("tryEmitNext refused " + m);
                }
            }
            subscriber.drain();
        };
        for (int i = 0; i < WARMUP_ROUNDS; i++) {
            round.run();
        }
        allocatedBytes();
        final long before = allocatedBytes();
        for (int i = 0; i < ROUNDS; i++) {
            round.run();
        }
        final long allocated = allocatedBytes() - before;
        assertThat(subscriber.count).isEqualTo((long) (WARMUP_ROUNDS + ROUNDS) * CAPACITY);
        assertThat((double) allocated / ((long) ROUNDS * CAPACITY)).isLessThan(0.01);
    }
}

package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * Guards the "0 bytes per message" goal of the adapter in steady state (the JMH {@code -prof gc} figure lives
 * in {@code bench/}): with a trampolined drain everything runs on this thread, so the thread's allocation
 * counter sees every byte the adapter allocates. Messages and subscriber are preallocated.
 */
@Timeout(300)
class MailboxPublisherAllocationTest {
    private static final int CAPACITY = 1024;
    private static final int WARMUP_ROUNDS = 300;
    private static final int ROUNDS = 200;

    /** Counts and keeps nothing. */
    static final class CountingSubscriber implements Subscriber<Integer> {
        Subscription subscription;
        long count;

        @Override
        public void onSubscribe(Subscription s) {
            subscription = s;
        }

        @Override
        public void onNext(Integer v) {
            count++;
        }

        @Override
        public void onError(Throwable t) {
        }

        @Override
        public void onComplete() {
        }
    }

    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getCurrentThreadAllocatedBytes();
    }

    @Test
    void shouldAllocateNothingPerMessageWhenDemandIsRequestedPerBatch() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(CAPACITY);
        final Integer[] messages = new Integer[CAPACITY];
        for (int i = 0; i < CAPACITY; i++) {
            messages[i] = 1_000 + i;
        }
        final CountingSubscriber subscriber = new CountingSubscriber();
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        final Runnable round = () -> {
            for (Integer m : messages) {
                mailbox.trySend(m);
            }
            subscriber.subscription.request(CAPACITY); // four batches of 256
        };
        final double perMessage = bytesPerMessage(round, subscriber);
        assertThat(perMessage).isLessThan(0.01);
    }

    @Test
    void shouldAllocateNothingPerMessageWhenDemandIsUnboundedAndEverySendWakesTheDrain() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(CAPACITY);
        final Integer[] messages = new Integer[CAPACITY];
        for (int i = 0; i < CAPACITY; i++) {
            messages[i] = 1_000 + i;
        }
        final CountingSubscriber subscriber = new CountingSubscriber();
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        subscriber.subscription.request(Long.MAX_VALUE);
        final Runnable round = () -> {
            for (Integer m : messages) {
                mailbox.trySend(m); // the drain waits on the empty mailbox: each send runs it, on this thread
            }
        };
        final double perMessage = bytesPerMessage(round, subscriber);
        assertThat(perMessage).isLessThan(0.01);
    }

    private static double bytesPerMessage(Runnable round, CountingSubscriber subscriber) {
        for (int i = 0; i < WARMUP_ROUNDS; i++) {
            round.run();
        }
        assertThat(subscriber.count).isEqualTo((long) WARMUP_ROUNDS * CAPACITY);
        allocatedBytes();
        final long before = allocatedBytes();
        for (int i = 0; i < ROUNDS; i++) {
            round.run();
        }
        final long allocated = allocatedBytes() - before;
        assertThat(subscriber.count).isEqualTo((long) (WARMUP_ROUNDS + ROUNDS) * CAPACITY);
        return (double) allocated / ((long) ROUNDS * CAPACITY);
    }
}

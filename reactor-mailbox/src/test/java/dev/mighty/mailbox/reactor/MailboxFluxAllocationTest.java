package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Fuseable;

/**
 * Guards "no allocation per message" on the fused path (the JMH {@code -prof gc} figure lives in {@code bench/}):
 * a counting ASYNC consumer polls on this thread, so the thread's allocation counter sees every byte that
 * {@code poll()}, the wake-ups and the "poll now" signals allocate. Messages are preallocated.
 */
@Timeout(300)
class MailboxFluxAllocationTest {
    private static final int CAPACITY = 1024;
    private static final int WARMUP_ROUNDS = 300;
    private static final int ROUNDS = 200;

    /** A fused consumer that counts and keeps nothing; polls on onNext(null) or when told to. */
    static final class CountingFusedSubscriber implements CoreSubscriber<Integer> {
        Fuseable.QueueSubscription<Integer> queue;
        long count;
        int mode;
        /** Set: onNext(null) only counts a signal, and the test polls later (as publishOn's worker would). */
        boolean deferred;
        long signals;

        @Override
        @SuppressWarnings("unchecked")
        public void onSubscribe(Subscription s) {
            queue = (Fuseable.QueueSubscription<Integer>) s;
            mode = queue.requestFusion(Fuseable.ANY | Fuseable.THREAD_BARRIER);
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(Integer v) {
            signals++;
            if (!deferred) {
                drain();
            }
        }

        void drain() {
            while (queue.poll() != null) {
                count++;
            }
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

    private static Integer[] messages() {
        final Integer[] messages = new Integer[CAPACITY];
        for (int i = 0; i < CAPACITY; i++) {
            messages[i] = 1_000 + i;
        }
        return messages;
    }

    @Test
    void shouldAllocateNothingPerMessageWhenTheFusedConsumerPollsABacklog() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(CAPACITY);
        final Integer[] messages = messages();
        final CountingFusedSubscriber subscriber = new CountingFusedSubscriber();
        subscriber.deferred = true;
        MailboxFlux.from(mailbox).subscribe(subscriber);
        assertThat(subscriber.mode).isEqualTo(Fuseable.ASYNC);
        final Runnable round = () -> {
            for (Integer m : messages) {
                mailbox.trySend(m); // the first send wakes the subscription ("poll now"); the rest pile up
            }
            subscriber.drain();   // polls the backlog of 1024, then registers for the next send
        };
        assertThat(bytesPerMessage(round, subscriber)).isLessThan(0.01);
        assertThat(subscriber.signals).isEqualTo(WARMUP_ROUNDS + ROUNDS); // one wake-up per round, not per message
    }

    @Test
    void shouldAllocateNothingPerMessageWhenEverySendWakesTheFusedConsumer() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(CAPACITY);
        final Integer[] messages = messages();
        final CountingFusedSubscriber subscriber = new CountingFusedSubscriber();
        MailboxFlux.from(mailbox).subscribe(subscriber);
        final Runnable round = () -> {
            for (Integer m : messages) {
                mailbox.trySend(m); // empty each time: each send wakes, signals, and the consumer polls it
            }
        };
        assertThat(bytesPerMessage(round, subscriber)).isLessThan(0.01);
    }

    private static double bytesPerMessage(Runnable round, CountingFusedSubscriber subscriber) {
        final long start = subscriber.count;
        for (int i = 0; i < WARMUP_ROUNDS; i++) {
            round.run();
        }
        assertThat(subscriber.count - start).isEqualTo((long) WARMUP_ROUNDS * CAPACITY);
        allocatedBytes();
        final long before = allocatedBytes();
        for (int i = 0; i < ROUNDS; i++) {
            round.run();
        }
        final long allocated = allocatedBytes() - before;
        assertThat(subscriber.count - start).isEqualTo((long) (WARMUP_ROUNDS + ROUNDS) * CAPACITY);
        return (double) allocated / ((long) ROUNDS * CAPACITY);
    }
}

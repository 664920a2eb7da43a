package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.StressSeed;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Several producers send into a small mailbox while the consumer side is a chain of short-lived subscriptions,
 * each cancelled and replaced: {@code take}, a fused {@code publishOn(.., 2).take}, {@code limitRate},
 * {@code concatMap} re-subscribing inners, {@code switchOnFirst}, and a subscriber disposed from another thread
 * while producers' sends run its {@code onNext}. The two faces alternate (the consumer role is shared). Every
 * message must arrive exactly once and in order per producer across all subscriptions, and nothing may remain.
 */
@Timeout(120)
class FluxChurnAbuseTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;
    private static final int PRODUCERS = 3;

    @Test
    void shouldDeliverEveryMessageOnceInOrderWhenSubscriptionsAreCancelledAndReplacedWhileProducersSend()
            throws Exception {
        churn(2_000, 1L);
    }

    @Tag("stress")
    @Test
    void shouldDeliverEveryMessageOnceInOrderWhenSubscriptionsChurnForLong() throws Exception {
        churn(200_000, StressSeed.of("FluxChurnAbuseTest.churn"));
    }

    private void churn(int perProducer, long seed) throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(16);
        final Scheduler scheduler = Schedulers.newSingle("churn-publishOn", true);
        final Recorder recorder = new Recorder(PRODUCERS);
        final long total = (long) PRODUCERS * perProducer;
        final List<Thread> producers = new ArrayList<>();
        final List<Throwable> producerErrors = new CopyOnWriteArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            final long base = (long) p << 32;
            final Thread producer = new Thread(() -> {
                try {
                    for (long seq = 0; seq < perProducer; seq++) {
                        mailbox.send(base | seq);
                    }
                } catch (Throwable e) {
                    producerErrors.add(e);
                }
            }, "churn-producer-" + p);
            producer.setDaemon(true);
            producers.add(producer);
            producer.start();
        }
        // Once every producer is done the mailbox is closed, so a round that asked for more than is left ends with
        // the stream instead of waiting: the last onNext of a subscriber disposed from another thread may land after
        // the next round sized itself on the count (§3.12 allows it), leaving that round one or more short.
        final Thread closer = new Thread(() -> {
            try {
                for (Thread producer : producers) {
                    producer.join();
                }
                mailbox.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "churn-closer");
        closer.setDaemon(true);
        closer.start();
        final SplittableRandom random = new SplittableRandom(seed);
        try {
            int round = 0;
            while (recorder.count.get() < total) {
                final long remaining = total - recorder.count.get();
                final int k = (int) Math.min(remaining, 1 + random.nextInt(40));
                final boolean fluxFace = (round & 1) == 0;
                final Flux<Long> source = fluxFace ? MailboxFlux.from(mailbox, 1 + random.nextInt(8))
                        : Flux.from(new MailboxPublisher<>(mailbox, 1 + random.nextInt(8)));
                final int style = random.nextInt(6);
                try {
                    switch (style) {
                        case 0 -> source.doOnNext(recorder::record).take(k).blockLast(TIMEOUT);
                        case 1 -> (fluxFace ? source.publishOn(scheduler, 2) : source) // fused only on the flux face
                                .doOnNext(recorder::record).take(k).blockLast(TIMEOUT);
                        case 2 -> source.limitRate(1 + random.nextInt(4)).doOnNext(recorder::record).take(k)
                                .blockLast(TIMEOUT);
                        case 3 -> Flux.range(0, 2).concatMap(i -> source.doOnNext(recorder::record).take(
                                i == 0 ? (k + 1) / 2 : k / 2), 1).blockLast(TIMEOUT);
                        case 4 -> source.switchOnFirst((first, flux) -> flux.take(k))
                                .doOnNext(recorder::record).blockLast(TIMEOUT);
                        default -> disposeFromAnotherThread(source, recorder, k);
                    }
                } catch (RuntimeException e) {
                    throw new AssertionError("round " + round + ", style " + style + ", k " + k + ", received "
                            + recorder.count.get() + " of " + total + ", seed " + seed, e);
                }
                round++;
            }
            for (Thread producer : producers) {
                producer.join(TIMEOUT.toMillis());
                assertThat(producer.isAlive()).isFalse();
            }
            assertThat(producerErrors).isEmpty();
            assertThat(recorder.violations).isEmpty();
            assertThat(recorder.count.get()).isEqualTo(total);
            for (int p = 0; p < PRODUCERS; p++) {
                assertThat(recorder.next[p]).as("producer %d", p).isEqualTo(perProducer);
            }
            assertThat(mailbox.size()).isZero();
            mailbox.close();
            assertThat(MailboxFlux.from(mailbox).collectList().block(TIMEOUT)).isEmpty();
        } finally {
            mailbox.close();
            scheduler.dispose();
        }
    }

    /** A subscriber with unbounded demand that this (test) thread disposes once it has received {@code k}. */
    private static void disposeFromAnotherThread(Flux<Long> source, Recorder recorder, int k) {
        final long target = recorder.count.get() + k;
        final BaseSubscriber<Long> subscriber = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                subscription.request(Long.MAX_VALUE);
            }

            @Override
            protected void hookOnNext(Long value) {
                recorder.record(value); // whatever reaches onNext was taken out of the mailbox: record it
            }
        };
        source.subscribe(subscriber);
        FluxOperatorsAbuseTest.await(() -> recorder.count.get() >= target);
        subscriber.dispose(); // may race an onNext running on a producer's thread; the next one is queued
    }

    /** Checks per-producer order as messages arrive, from whichever thread delivers them. */
    static final class Recorder {
        final long[] next;
        final AtomicLong count = new AtomicLong();
        final List<String> violations = new CopyOnWriteArrayList<>();

        Recorder(int producers) {
            this.next = new long[producers];
        }

        synchronized void record(Long message) {
            final int producer = (int) (message >>> 32);
            final long seq = message & 0xFFFF_FFFFL;
            if (seq != next[producer] && violations.size() < 10) {
                violations.add("producer " + producer + ": expected " + next[producer] + " got " + seq);
            }
            next[producer] = seq + 1;
            count.incrementAndGet();
        }
    }
}

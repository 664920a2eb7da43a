package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Sinks;
import reactor.core.publisher.Sinks.EmitResult;

/**
 * {@link MailboxSinks} under concurrent emitters: checks only what holds under every interleaving (nothing lost,
 * duplicated or reordered per emitter; never {@code FAIL_NON_SERIALIZED}; one terminal emission wins), with bounded
 * loops and {@link Hang} limits, never how fast.
 */
@Timeout(300)
class MailboxSinksConcurrencyTest {
    private static final int EMITTERS = 4;
    private static final int PER_EMITTER = 5_000;
    private static final int ROUNDS = 5;

    @RegisterExtension
    final SingleSchedulers schedulers = new SingleSchedulers();

    /** Checks, on the one delivering thread, that each emitter's values arrive once and in order. */
    static final class PerEmitterOrder extends BaseSubscriber<Long> {
        final long[] next = new long[EMITTERS];
        final AtomicReference<String> failure = new AtomicReference<>();
        final CountDownLatch done = new CountDownLatch(1);
        long received;

        @Override
        protected void hookOnNext(Long value) {
            final int emitter = (int) (value % EMITTERS);
            final long seq = value / EMITTERS;
            if (seq != next[emitter]) {
                failure.compareAndSet(null, "emitter " + emitter + ": expected " + next[emitter] + ", got " + seq);
            }
            next[emitter] = seq + 1;
            received++;
        }

        @Override
        protected void hookOnError(Throwable t) {
            failure.compareAndSet(null, "onError: " + t);
            done.countDown();
        }

        @Override
        protected void hookOnComplete() {
            done.countDown();
        }
    }

    @Nested
    class ConcurrentEmitters {

        @Test
        void shouldDeliverEveryValueOnceInOrderPerEmitterWhenFourThreadsEmitAtOnce() throws Exception {
            for (int round = 0; round < ROUNDS; round++) {
                final Sinks.Many<Long> sink = MailboxSinks.many(64); // small: emitters see FAIL_OVERFLOW often
                final PerEmitterOrder subscriber = new PerEmitterOrder();
                sink.asFlux().publishOn(schedulers.single("consumer-" + round)).subscribe(subscriber);
                final CyclicBarrier start = new CyclicBarrier(EMITTERS);
                final AtomicReference<EmitResult> unexpected = new AtomicReference<>();
                final List<Thread> emitters = new ArrayList<>();
                for (int e = 0; e < EMITTERS; e++) {
                    final int emitter = e;
                    final Thread t = new Thread(() -> {
                        try {
                            start.await(Hang.SECONDS, TimeUnit.SECONDS);
                        } catch (Exception ex) {
                            throw new IllegalStateException(ex);
                        }
                        for (long seq = 0; seq < PER_EMITTER; seq++) {
                            final Long value = seq * EMITTERS + emitter;
                            EmitResult result;
                            while ((result = sink.tryEmitNext(value)) != EmitResult.OK) {
                                if (result != EmitResult.FAIL_OVERFLOW) {
                                    unexpected.compareAndSet(null, result);
                                    return;
                                }
                                Thread.onSpinWait();
                            }
                        }
                    }, "emitter-" + emitter);
                    t.start();
                    emitters.add(t);
                }
                for (Thread t : emitters) {
                    t.join(Hang.TIMEOUT.toMillis());
                    assertThat(t.isAlive()).as("hang: %s did not end", t.getName()).isFalse();
                }
                assertThat(unexpected.get()).as("round %d", round).isNull();
                assertThat(sink.tryEmitComplete()).isEqualTo(EmitResult.OK);
                Hang.await(subscriber.done, "the subscriber's onComplete");
                assertThat(subscriber.failure.get()).as("round %d", round).isNull();
                assertThat(subscriber.received).isEqualTo((long) EMITTERS * PER_EMITTER);
            }
        }

        @Test
        void shouldNeverAnswerNonSerializedWhenEmitNextRacesFromTwoThreads() {
            for (int round = 0; round < 200; round++) {
                final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
                final Sinks.Many<Integer> sink = MailboxSinks.many(mailbox);
                final AtomicReference<EmitResult> failure = new AtomicReference<>();
                final Sinks.EmitFailureHandler record = (signal, result) -> {
                    failure.compareAndSet(null, result);
                    return false;
                };
                Hang.race(() -> sink.emitNext(1, record), () -> sink.emitNext(2, record));
                assertThat(failure.get()).isNull();
                assertThat(mailbox.size()).isEqualTo(2);
            }
        }
    }

    @Nested
    class TerminalEmissions {

        @Test
        void shouldLetExactlyOneTerminalEmissionWinWhenTheyRace() {
            for (int round = 0; round < 500; round++) {
                final Sinks.Many<Integer> sink = MailboxSinks.many(4);
                final AtomicInteger ok = new AtomicInteger();
                final IllegalStateException boom = new IllegalStateException("boom");
                Hang.race(() -> {
                    if (sink.tryEmitComplete() == EmitResult.OK) {
                        ok.incrementAndGet();
                    }
                }, () -> {
                    if (sink.tryEmitError(boom) == EmitResult.OK) {
                        ok.incrementAndGet();
                    }
                });
                assertThat(ok).as("round %d", round).hasValue(1);
                assertThat(sink.tryEmitNext(1)).isEqualTo(EmitResult.FAIL_TERMINATED);
            }
        }

        @Test
        void shouldDeliverEveryAdmittedValueBeforeTheEndWhenEmitsRaceTheCompletion() {
            for (int round = 0; round < 200; round++) {
                final Sinks.Many<Integer> sink = MailboxSinks.many(16);
                final AtomicInteger admitted = new AtomicInteger();
                Hang.race(() -> {
                    for (int i = 0; i < 8; i++) {
                        if (sink.tryEmitNext(i) == EmitResult.OK) {
                            admitted.incrementAndGet();
                        }
                    }
                }, sink::tryEmitComplete);
                final Long count = sink.asFlux().count().block(Hang.TIMEOUT);
                assertThat(count).as("round %d", round).isEqualTo((long) admitted.get());
            }
        }
    }
}

package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

/**
 * Reactor pipelines over a shared mailbox with several producers: every message exactly once, in order per
 * producer. Messages are {@code producer << 32 | sequence}.
 */
@Timeout(120)
class MailboxPipelineTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;
    private static final int PRODUCERS = 4;
    private static final int PER_PRODUCER = 25_000;

    private final List<ExecutorService> pools = new ArrayList<>();

    @AfterEach
    void shutdown() {
        pools.forEach(ExecutorService::shutdownNow);
    }

    private ExecutorService pool(int threads, String name) {
        final ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
            final Thread thread = new Thread(r, name);
            thread.setDaemon(true);
            return thread;
        });
        pools.add(pool);
        return pool;
    }

    @Test
    void shouldDeliverExactlyOnceInOrderPerProducerThroughPublishOnAndLimitRate() throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(256);
        runPipeline(mailbox, new MailboxPublisher<>(mailbox, 64), PER_PRODUCER, PRODUCERS, true);
    }

    @Test
    void shouldDeliverExactlyOnceInOrderPerProducerWhenDrainingOnAnExecutor() throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(256);
        final MailboxPublisher<Long> publisher = new MailboxPublisher<>(mailbox, 64, pool(1, "drainer"));
        runPipeline(mailbox, publisher, PER_PRODUCER, PRODUCERS, true);
    }

    @Test
    void shouldDeliverExactlyOnceInOrderPerProducerWhenOneProducerIsAFluxThroughMailboxSubscriber()
            throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(128);
        final CountDownLatch othersDone = new CountDownLatch(1);
        // The fourth producer is a Flux; its completion closes the mailbox once the three raw producers are done.
        Flux.range(0, PER_PRODUCER)
                .map(seq -> (long) (PRODUCERS - 1) << 32 | seq)
                .concatWith(Mono.<Long>fromRunnable(() -> await(othersDone)).subscribeOn(Schedulers.boundedElastic()))
                .subscribeOn(Schedulers.boundedElastic())
                .subscribe(new MailboxSubscriber<>(mailbox, 32));
        runPipeline(mailbox, new MailboxPublisher<>(mailbox, 16), PER_PRODUCER, PRODUCERS - 1, false, othersDone);
    }

    @Test
    @Tag("stress")
    void shouldDeliverExactlyOnceInOrderPerProducerUnderStress() throws Exception {
        for (int round = 0; round < 20; round++) {
            final Mailbox<Long> mailbox = Mailboxes.bounded(64);
            runPipeline(mailbox, new MailboxPublisher<>(mailbox, 7), 100_000, PRODUCERS, true);
        }
    }

    private void runPipeline(Mailbox<Long> mailbox, Publisher<Long> publisher, int perProducer, int rawProducers,
            boolean close) throws Exception {
        runPipeline(mailbox, publisher, perProducer, rawProducers, close, new CountDownLatch(1));
    }

    private void runPipeline(Mailbox<Long> mailbox, Publisher<Long> publisher, int perProducer, int rawProducers,
            boolean close, CountDownLatch rawDone) throws Exception {
        final long[] next = new long[PRODUCERS];
        final AtomicReference<String> disorder = new AtomicReference<>();
        final StepVerifier verifier = StepVerifier.create(
                        Flux.from(publisher).publishOn(Schedulers.parallel()).limitRate(100))
                .thenConsumeWhile(v -> {
                    final int producer = (int) (v >>> 32);
                    final long seq = v & 0xFFFF_FFFFL;
                    if (seq != next[producer] && disorder.get() == null) {
                        disorder.set("producer=" + producer + ", expected=" + next[producer] + ", got=" + seq);
                    }
                    next[producer] = seq + 1;
                    return true;
                })
                .expectComplete()
                .verifyLater();
        final ExecutorService producers = pool(rawProducers, "producer");
        final List<Future<?>> futures = new ArrayList<>();
        for (int p = 0; p < rawProducers; p++) {
            final long base = (long) p << 32;
            futures.add(producers.submit(() -> {
                for (int seq = 0; seq < perProducer; seq++) {
                    mailbox.send(base | seq); // parks while full: the pipeline's demand is the only way out
                }
                return null;
            }));
        }
        for (Future<?> future : futures) {
            future.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }
        rawDone.countDown();
        if (close) {
            mailbox.close();
        }
        verifier.verify(TIMEOUT);
        assertThat(disorder.get()).isNull();
        for (int p = 0; p < PRODUCERS; p++) {
            if (p < rawProducers || !close) {
                assertThat(next[p]).as("producer %d", p).isEqualTo(perProducer);
            }
        }
        assertThat(mailbox.isTerminated()).isTrue();
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.StressSeed;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.reactor.MailboxMonos;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The shape of the lost room wake-up (docs/reliability.md, Findings): every kind of room waiter at once on a tiny
 * mailbox, each with the ways its registration can become unneeded. Finite {@code sharing} subscribers whose
 * sources complete (a completion flushes into room, a source's own {@code onNext} flushes into room the fused face
 * has not announced yet), threads blocked in {@code send}, {@link MailboxMonos#send} chains, and a consumer that does
 * a little work per message (a consumer that keeps up hides lost wake-ups), for every consumer face and capacities
 * 1 to 4. What holds under every interleaving: every message arrives once, in order per producer, and the owner's
 * close ends the stream; a stall fails as "no progress for {@link Hang#TIMEOUT}" with the stats and every stack.
 */
@Timeout(600)
class CompletingSourcesStallTest {

    /** The consumer faces. */
    enum Face { RECV_MANY, PUBLISHER_EXECUTOR, FUSED_PUBLISH_ON, FLUX_UNFUSED }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldDeliverEverythingWhenCompletingSourcesAndBlockedSendersShareATinyMailbox(Face face) throws Exception {
        final SplittableRandom random = new SplittableRandom(StressSeed.of("CompletingSources." + face));
        for (int round = 0; round < 4; round++) {
            round(face, random, 300);
        }
    }

    @Tag("stress")
    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldDeliverEverythingWhenCompletingSourcesAndBlockedSendersShareATinyMailboxForLong(Face face)
            throws Exception {
        final SplittableRandom random = new SplittableRandom(StressSeed.of("CompletingSourcesLong." + face));
        for (int round = 0; round < 40; round++) {
            round(face, random, 3_000);
        }
    }

    private static void round(Face face, SplittableRandom random, int per) throws Exception {
        final int capacity = 1 + random.nextInt(4); // 1 .. 4
        final Mailbox<Long> mailbox = Mailboxes.bounded(capacity);
        final int sources = 2 + random.nextInt(4);
        final int senders = 1 + random.nextInt(3);
        final int monos = random.nextInt(2);
        final int producers = sources + senders + monos;
        final SharedMailboxStallTest.Checker checker = new SharedMailboxStallTest.Checker(producers);
        final long workNanos = 500 + random.nextInt(1_500); // 0.5 .. 2 µs of work per message
        final ExecutorService executor = Executors.newSingleThreadExecutor();
        final CompletableFuture<Void> consumed = new CompletableFuture<>();
        final Scheduler sourcesOn = random.nextBoolean() ? Schedulers.parallel() : Schedulers.boundedElastic();
        final List<Thread> threads = new ArrayList<>();
        try {
            startConsumer(face, mailbox, m -> {
                work(workNanos);
                checker.accept(m);
            }, executor, consumed, threads, checker);
            int producer = 0;
            for (int s = 0; s < sources; s++, producer++) {
                final long base = (long) producer << 32;
                // finite: each completes, and its onComplete may flush into room nobody has announced yet
                Flux.range(0, per).map(i -> base | i).subscribeOn(sourcesOn)
                        .subscribe(MailboxSubscriber.sharing(mailbox, 1 + random.nextInt(capacity)));
            }
            for (int s = 0; s < senders; s++, producer++) {
                final long base = (long) producer << 32;
                final Thread sender = new Thread(() -> {
                    try {
                        for (int i = 0; i < per; i++) {
                            mailbox.send(base | i);
                        }
                    } catch (Throwable t) {
                        checker.violations.add("send: " + t);
                    }
                }, "blocked-sender-" + s);
                threads.add(sender);
                sender.start();
            }
            for (int s = 0; s < monos; s++, producer++) {
                final long base = (long) producer << 32;
                Flux.range(0, per).concatMap(i -> MailboxMonos.send(mailbox, base | i))
                        .subscribe(null, e -> checker.violations.add("Mono send: " + e));
            }
            final long total = (long) producers * per;
            Hang.awaitProgress(checker.received::get, total, face + " deliveries (capacity " + capacity + ", "
                            + sources + " sharing sources, " + senders + " senders, " + monos + " Mono senders)",
                    () -> "stats=" + mailbox.stats() + " violations=" + checker.violations);
            mailbox.close(); // the owner's close, once everything is in: the consumer completes
            consumed.get(Hang.SECONDS, TimeUnit.SECONDS);
            assertThat(checker.violations).isEmpty();
            assertThat(checker.received.get()).isEqualTo(total);
            assertThat(mailbox.stats().rejectedClosed()).isZero();
        } finally {
            mailbox.close();
            executor.shutdown();
            assertThat(executor.awaitTermination(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
            for (Thread thread : threads) {
                thread.join(Hang.TIMEOUT.toMillis());
                assertThat(thread.isAlive()).as(thread.getName()).isFalse();
            }
        }
    }

    private static void startConsumer(Face face, Mailbox<Long> mailbox, java.util.function.LongConsumer consumer,
            ExecutorService executor, CompletableFuture<Void> consumed, List<Thread> threads,
            SharedMailboxStallTest.Checker checker) {
        switch (face) {
            case RECV_MANY -> {
                final Thread thread = new Thread(() -> {
                    try {
                        while (mailbox.recvMany(consumer::accept, 4) > 0) {
                            // until closed and drained
                        }
                        consumed.complete(null);
                    } catch (Throwable t) {
                        checker.violations.add("recvMany: " + t);
                        consumed.completeExceptionally(t);
                    }
                }, "stall-recv");
                threads.add(thread);
                thread.start();
            }
            case PUBLISHER_EXECUTOR -> Flux.from(new MailboxPublisher<>(mailbox, 4, executor))
                    .subscribe(consumer::accept, consumed::completeExceptionally, () -> consumed.complete(null));
            case FUSED_PUBLISH_ON -> MailboxFlux.from(mailbox).publishOn(Schedulers.single(), 2)
                    .subscribe(consumer::accept, consumed::completeExceptionally, () -> consumed.complete(null));
            case FLUX_UNFUSED -> MailboxFlux.from(mailbox).hide().limitRate(2)
                    .subscribe(consumer::accept, consumed::completeExceptionally, () -> consumed.complete(null));
            default -> throw new AssertionError(face);
        }
    }

    /** A little work per message: a consumer that keeps up would hide a lost wake-up. */
    private static void work(long nanos) {
        final long start = System.nanoTime();
        while (System.nanoTime() - start < nanos) {
            Thread.onSpinWait();
        }
    }
}

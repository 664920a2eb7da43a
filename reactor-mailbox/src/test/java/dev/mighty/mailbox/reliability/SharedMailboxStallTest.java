package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Several {@link MailboxSubscriber}s sharing one mailbox, as a new user wires them: each upstream a
 * {@code Flux.range(..)} on {@code subscribeOn(parallel or boundedElastic)} that goes quiet without completing,
 * random prefetches whose sum exceeds the capacity, idle upstreams that request and never send, and each consumer
 * face. The finding it pins (docs/reliability.md, Findings): with demand backed by reservations, the idle
 * upstreams' permits starved every other subscriber (hold-and-wait) — {@code size=0, reserved=capacity}. Now demand
 * holds no room, so every message of every live upstream arrives, in order per upstream, whatever the others do.
 * A stall fails as "no delivery for {@link Hang#TIMEOUT}", with the mailbox's stats and every thread's stack.
 */
@Timeout(300)
class SharedMailboxStallTest {
    private static final long SEED = Long.getLong("mailbox.stress.seed", 18L);

    /** The consumer faces. */
    enum Face { RECV_MANY, PUBLISHER_EXECUTOR, FUSED_PUBLISH_ON }

    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldDeliverEverythingWhenIdleUpstreamsShareTheMailbox(Face face) throws Exception {
        final SplittableRandom random = new SplittableRandom(SEED + face.ordinal());
        for (int round = 0; round < 6; round++) {
            share(face, random, 3 + random.nextInt(4), 2_000);
        }
    }

    @Tag("stress")
    @ParameterizedTest
    @EnumSource(Face.class)
    void shouldDeliverEverythingWhenIdleUpstreamsShareTheMailboxForLong(Face face) throws Exception {
        final SplittableRandom random = new SplittableRandom(System.nanoTime());
        for (int round = 0; round < 40; round++) {
            share(face, random, 3 + random.nextInt(4), 50_000);
        }
    }

    @Test
    void shouldCompleteWithEverythingWhenFiniteSourcesShareTheMailboxAndTheOwnerCloses() throws Exception {
        final SplittableRandom random = new SplittableRandom(SEED);
        for (int round = 0; round < 10; round++) {
            final Mailbox<Long> mailbox = Mailboxes.bounded(4 << random.nextInt(4));
            final int sources = 2 + random.nextInt(5);
            final int per = 1_000 + random.nextInt(2_000);
            final Checker checker = new Checker(sources);
            final CountDownLatch completed = new CountDownLatch(1);
            MailboxFlux.from(mailbox).publishOn(Schedulers.single(), 8)
                    .subscribe(checker::accept, e -> checker.violations.add("onError: " + e), completed::countDown);
            final CountDownLatch sourcesDone = new CountDownLatch(sources);
            for (int u = 0; u < sources; u++) {
                final long base = (long) u << 32;
                Flux.range(0, per).map(i -> base | i)
                        .doOnComplete(sourcesDone::countDown)
                        .subscribeOn(Schedulers.parallel())
                        .subscribe(MailboxSubscriber.sharing(mailbox, 1 + random.nextInt(mailbox.capacity())));
            }
            Hang.await(sourcesDone, "every source completing");
            // NOTE: a source's onComplete is signalled before the subscriber has admitted what it buffered; closing
            // now may race those admissions, so the owner waits until they are all in (nothing else sends).
            Hang.awaitProgress(() -> mailbox.stats().admitted(), (long) sources * per, "admissions",
                    () -> "stats=" + mailbox.stats());
            assertThat(mailbox.isClosed()).as("sharing sources leave the mailbox open").isFalse();
            mailbox.close();
            Hang.await(completed, "the consumer's onComplete");
            assertThat(checker.violations).isEmpty();
            assertThat(checker.received.get()).isEqualTo((long) sources * per);
        }
    }

    private static void share(Face face, SplittableRandom random, int live, int perUpstream) throws Exception {
        final int capacity = 4 << random.nextInt(4); // 4 .. 32
        final Mailbox<Long> mailbox = Mailboxes.bounded(capacity);
        final Checker checker = new Checker(live);
        final long total = (long) live * perUpstream;
        final Scheduler upstreams = random.nextBoolean() ? Schedulers.parallel() : Schedulers.boundedElastic();
        final ExecutorService executor = Executors.newSingleThreadExecutor();
        final Thread[] recvThread = new Thread[1];
        try {
            startConsumer(face, mailbox, checker, executor, recvThread);
            // idle holders first: under the reservation design these alone took every slot of the mailbox
            final int idle = 1 + random.nextInt(3);
            for (int i = 0; i < idle; i++) {
                Flux.<Long>never().subscribe(new MailboxSubscriber<>(mailbox, capacity));
            }
            for (int u = 0; u < live; u++) {
                final long base = (long) u << 32;
                Flux.range(0, perUpstream).map(i -> base | i).concatWith(Flux.never()) // quiet, never completes
                        .subscribeOn(upstreams)
                        .subscribe(new MailboxSubscriber<>(mailbox, 1 + random.nextInt(capacity)));
            }
            Hang.awaitProgress(checker.received::get, total, face + " deliveries (capacity " + capacity + ", "
                    + live + " live upstreams, " + idle + " idle)",
                    () -> "stats=" + mailbox.stats() + " closeCause=" + mailbox.closeCause() + " violations="
                            + checker.violations);
            assertThat(checker.violations).isEmpty();
            assertThat(mailbox.stats().reserved()).isZero();
        } finally {
            mailbox.close();
            executor.shutdown();
            assertThat(executor.awaitTermination(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
            if (recvThread[0] != null) {
                recvThread[0].join(Hang.TIMEOUT.toMillis());
                assertThat(recvThread[0].isAlive()).isFalse();
            }
        }
        assertThat(checker.violations).isEmpty();
    }

    private static void startConsumer(Face face, Mailbox<Long> mailbox, Checker checker, ExecutorService executor,
            Thread[] recvThread) {
        switch (face) {
            case RECV_MANY -> {
                recvThread[0] = new Thread(() -> {
                    try {
                        while (mailbox.recvMany(checker::accept, 16) > 0) {
                            // until closed and drained
                        }
                    } catch (Throwable t) {
                        checker.violations.add("recvMany: " + t);
                    }
                }, "stall-recv");
                recvThread[0].start();
            }
            case PUBLISHER_EXECUTOR -> Flux.from(new MailboxPublisher<>(mailbox, 16, executor)) // unbounded demand
                    .subscribe(checker::accept, e -> checker.violations.add("onError: " + e));
            case FUSED_PUBLISH_ON -> MailboxFlux.from(mailbox).publishOn(Schedulers.single(), 4)
                    .subscribe(checker::accept, e -> checker.violations.add("onError: " + e));
            default -> throw new AssertionError(face);
        }
    }

    /** Books deliveries per upstream (the upstream's index in the high word): in order, none twice. */
    static final class Checker {
        final long[] next;
        final AtomicLong received = new AtomicLong();
        final List<String> violations = new CopyOnWriteArrayList<>();

        Checker(int upstreams) {
            this.next = new long[upstreams];
        }

        /** One consumer thread at a time (the face's contract). */
        void accept(long m) {
            final int u = (int) (m >>> 32);
            final long seq = m & 0xFFFF_FFFFL;
            if (u >= next.length || seq != next[u]) {
                if (violations.size() < 10) {
                    violations.add("upstream " + u + ": expected " + (u < next.length ? next[u] : -1) + " got " + seq);
                }
            } else {
                next[u] = seq + 1;
            }
            received.incrementAndGet();
        }

    }
}

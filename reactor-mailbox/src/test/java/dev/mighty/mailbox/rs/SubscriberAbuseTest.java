package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.SpecProbes;
import dev.mighty.mailbox.reactor.MailboxFlux;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * {@link MailboxSubscriber} and {@link MailboxProcessor} fed by upstreams on their own threads, against a consumer
 * on another: several subscribers sharing one mailbox, the mailbox closed under emitting upstreams, upstream and
 * consumer on one thread (re-entrance), and a processor whose downstream fails or leaves mid-stream.
 */
@Timeout(300)
@ExtendWith(SpecProbes.class)
class SubscriberAbuseTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @Test
    void shouldAdmitEverythingFromSeveralSubscribersSharingTheMailboxAndCancelThemAllOnClose() throws Exception {
        share(3, 3_000);
    }

    @Tag("stress")
    @Test
    void shouldAdmitEverythingFromSeveralSubscribersSharingTheMailboxForLong() throws Exception {
        share(4, 300_000);
    }

    private void share(int upstreams, int perUpstream) throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(32);
        final Scheduler scheduler = Schedulers.newParallel("abuse-upstream", upstreams, true);
        final CountDownLatch cancelled = new CountDownLatch(upstreams);
        final long[] next = new long[upstreams];
        final List<String> violations = new CopyOnWriteArrayList<>();
        final AtomicLong received = new AtomicLong();
        final AtomicLong maxOccupancy = new AtomicLong();
        try {
            // the consumer first: a fused publishOn on its own worker
            final CountDownLatch consumed = new CountDownLatch(1);
            final long total = (long) upstreams * perUpstream;
            MailboxFlux.from(mailbox).publishOn(Schedulers.single(), 4).subscribe(m -> {
                // on the polling thread, so 'received' holds still; not size(): it is clamped to the capacity
                final MailboxStats stats = mailbox.stats();
                maxOccupancy.accumulateAndGet(stats.admitted() - stats.received(), Math::max);
                final int u = (int) (m >>> 32);
                final long seq = m & 0xFFFF_FFFFL;
                if (seq != next[u] && violations.size() < 10) {
                    violations.add("upstream " + u + ": expected " + next[u] + " got " + seq);
                }
                next[u] = seq + 1;
                if (received.incrementAndGet() == total) {
                    consumed.countDown();
                }
            }, error -> violations.add("consumer onError: " + error));
            for (int u = 0; u < upstreams; u++) {
                final long base = (long) u << 32;
                // never completes (that would close the mailbox for everyone): only a close ends it
                Flux.range(0, perUpstream).map(i -> base | i).concatWith(Flux.never())
                        .doOnCancel(cancelled::countDown)
                        .subscribeOn(scheduler)
                        .subscribe(new MailboxSubscriber<>(mailbox, 1 + 7 * u)); // prefetch 1, 8, 15, ...
            }
            // a stall is "no delivery for Hang.TIMEOUT", not "not done by a deadline": a loaded machine is slow, not stuck
            Hang.awaitProgress(received::get, total, "deliveries",
                    () -> "stats=" + mailbox.stats() + " closeCause=" + mailbox.closeCause() + " violations=" + violations);
            assertThat(violations).isEmpty();
            assertThat(maxOccupancy.get()).as("admitted - received").isLessThanOrEqualTo(mailbox.capacity());
            mailbox.close(); // someone else's close: every MailboxSubscriber cancels its upstream
            assertThat(cancelled.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        } finally {
            mailbox.close();
            scheduler.dispose();
        }
    }

    @Test
    void shouldCancelAnEmittingUpstreamAndKeepAGapFreePrefixWhenTheConsumerClosesTheMailbox() throws Exception {
        for (int round = 0; round < 20; round++) {
            final Mailbox<Long> mailbox = Mailboxes.bounded(8);
            final CountDownLatch cancelled = new CountDownLatch(1);
            final Scheduler scheduler = Schedulers.newSingle("abuse-emitter", true);
            try {
                Flux.<Long, Long>generate(() -> 0L, (i, sink) -> {
                    sink.next(i);
                    return i + 1;
                }).doOnCancel(cancelled::countDown).subscribeOn(scheduler).subscribe(new MailboxSubscriber<>(mailbox));
                final List<Long> got = new ArrayList<>();
                final int stopAt = 5 + round * 7;
                while (got.size() < stopAt) {
                    final Long m = mailbox.recv(TIMEOUT);
                    assertThat(m).isNotNull();
                    got.add(m);
                }
                mailbox.close(); // while the upstream keeps emitting on its thread
                assertThat(cancelled.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
                for (Long m; (m = mailbox.recv(TIMEOUT)) != null; ) {
                    got.add(m);
                }
                assertThat(mailbox.isTerminated()).isTrue();
                for (int i = 0; i < got.size(); i++) {
                    assertThat(got.get(i)).as("round %d", round).isEqualTo((long) i);
                }
                assertThat(got.size()).isLessThanOrEqualTo(stopAt + mailbox.capacity());
            } finally {
                scheduler.dispose();
            }
        }
    }

    @Test
    void shouldPassEverythingWhenTheUpstreamAndTheConsumerRunOnOneThread() {
        for (boolean fused : new boolean[] {false, true}) {
            final int count = 10_000;
            final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
            final CheckingSubscriber<Integer> consumer = new CheckingSubscriber<>(Long.MAX_VALUE);
            // limitRate is a fused publishOn(immediate): it polls on the thread that signals it
            (fused ? MailboxFlux.from(mailbox).limitRate(3) : MailboxFlux.from(mailbox)).subscribe(consumer);
            // a synchronous upstream on this thread: its sends run the consumer, whose receives ask it for more
            Flux.range(0, count).subscribe(new MailboxSubscriber<>(mailbox, 3));
            assertThat(consumer.completed).as("fused=%s", fused).isTrue();
            assertThat(List.copyOf(consumer.values)).hasSize(count).isSorted();
            assertThat(consumer.violations).isEmpty();
        }
    }

    // ------------------------------------------------------------------ MailboxProcessor

    @Test
    void shouldCancelTheUpstreamAndKeepTheRestWhenTheProcessorsDownstreamOnNextThrows() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(mailbox, 4);
        final CountDownLatch upstreamCancelled = new CountDownLatch(1);
        Flux.range(0, 100).doOnCancel(upstreamCancelled::countDown).subscribe(processor);
        final CheckingSubscriber<Integer> failing = new CheckingSubscriber<>(Long.MAX_VALUE);
        failing.onNextHook = (s, v) -> {
            if (v == 2) {
                throw new IllegalStateException("boom");
            }
        };
        processor.subscribe(failing);
        assertThat(failing.awaitTerminated(TIMEOUT)).isTrue();
        assertThat(failing.error).hasMessage("boom");
        assertThat(upstreamCancelled.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        assertThat(mailbox.isClosed()).isTrue();
        final CheckingSubscriber<Integer> next = new CheckingSubscriber<>(Long.MAX_VALUE);
        processor.subscribe(next); // what was admitted stays receivable, then the end
        assertThat(next.awaitTerminated(TIMEOUT)).isTrue();
        assertThat(next.completed).isTrue();
        final List<Integer> rest = List.copyOf(next.values); // 3, 4, ... : the failed 2 counts as delivered
        assertThat(rest).isNotEmpty().hasSizeLessThanOrEqualTo(mailbox.capacity());
        for (int i = 0; i < rest.size(); i++) {
            assertThat(rest.get(i)).isEqualTo(3 + i);
        }
        assertThat(failing.violations).isEmpty();
    }

    @Test
    void shouldKeepAGapFreeStreamWhenTheProcessorsDownstreamCancelsWhileTheUpstreamEmitsOnAnotherThread()
            throws Exception {
        for (int round = 0; round < 20; round++) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
            final MailboxProcessor<Integer> processor = new MailboxProcessor<>(mailbox, 3);
            final CountDownLatch upstreamCancelled = new CountDownLatch(1);
            final Scheduler scheduler = Schedulers.newSingle("abuse-processor-upstream", true);
            try {
                final List<Integer> first = new CopyOnWriteArrayList<>();
                final CheckingSubscriber<Integer> downstream = new CheckingSubscriber<>(Long.MAX_VALUE);
                final int stopAt = 1 + round * 3;
                downstream.onNextHook = (s, v) -> {
                    first.add(v);
                    if (first.size() == stopAt) {
                        s.cancel();
                    }
                };
                processor.subscribe(downstream);
                Flux.range(0, 1_000_000).doOnCancel(upstreamCancelled::countDown).subscribeOn(scheduler)
                        .subscribe(processor);
                assertThat(upstreamCancelled.await(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
                assertThat(first).hasSize(stopAt);
                final CheckingSubscriber<Integer> rest = new CheckingSubscriber<>(Long.MAX_VALUE);
                processor.subscribe(rest);
                assertThat(rest.awaitTerminated(TIMEOUT)).isTrue();
                assertThat(rest.completed).isTrue();
                final List<Integer> all = new ArrayList<>(first);
                all.addAll(rest.values);
                for (int i = 0; i < all.size(); i++) {
                    assertThat(all.get(i)).as("round %d", round).isEqualTo(i);
                }
                assertThat(downstream.violations).isEmpty();
                assertThat(rest.violations).isEmpty();
            } finally {
                scheduler.dispose();
            }
        }
    }
}

package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.WaitPolicy;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;

/**
 * What a hand-off costs in CPU and in upstream requests, measured with counters that do not depend on speed:
 * thread CPU time of an idle consumer, and the sizes of the requests a full mailbox makes its subscriber send.
 */
@Timeout(60)
class HandOffCostTest {

    /**
     * Idle cost: a subscribed executor-mode publisher with nothing to deliver backs off once (its default wait
     * policy: at most a few hundred spins and yields), registers and gives the thread back. Over 2 s its thread
     * may use 2% of a core (40 ms); it uses well under 1 ms when it parks as designed, so the bound holds however
     * loaded the machine is (thread CPU time counts only the time the thread itself ran).
     */
    @Test
    void shouldUseAlmostNoCpuWhenAnExecutorPublisherIdles() throws Exception {
        final ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(bean.isThreadCpuTimeSupported() && bean.isThreadCpuTimeEnabled(),
                "thread CPU time not measurable on this JVM");
        final AtomicReference<Thread> worker = new AtomicReference<>();
        final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
            final Thread t = new Thread(r, "idle-publisher");
            t.setDaemon(true);
            worker.set(t);
            return t;
        });
        try {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(1024);
            final List<Integer> received = new ArrayList<>();
            final CountDownLatch first = new CountDownLatch(1);
            new MailboxPublisher<>(mailbox, 256, executor).subscribe(new Subscriber<Integer>() {
                @Override
                public void onSubscribe(Subscription s) {
                    s.request(Long.MAX_VALUE);
                }

                @Override
                public void onNext(Integer item) {
                    received.add(item);
                    first.countDown();
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onComplete() {
                }
            });
            assertThat(mailbox.trySend(1)).isTrue(); // the worker thread exists and has run a drain
            assertThat(first.await(10, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(100); // past the back-off: the drain registered and returned the thread
            final long id = worker.get().getId();
            final long cpu0 = bean.getThreadCpuTime(id);
            Thread.sleep(2_000);
            final long used = bean.getThreadCpuTime(id) - cpu0;
            assertThat(used).as("CPU ns used by the idle executor thread over 2 s").isLessThan(
                    TimeUnit.MILLISECONDS.toNanos(40));
            assertThat(mailbox.stats().consumerParked()).isTrue(); // it waits registered, not on the thread
        } finally {
            executor.shutdownNow();
        }
    }

    /**
     * Replenishment in runs: a full mailbox whose consumer frees one slot at a time must not make its subscriber
     * reserve and request one slot at a time. Single-threaded, so every request is observed in order.
     */
    @Test
    void shouldRequestInRunsWhenTheConsumerFreesOneSlotAtATime() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(64);
        final MailboxSubscriberTest.RecordingSubscription upstream = new MailboxSubscriberTest.RecordingSubscription();
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox);
        subscriber.onSubscribe(upstream);
        long sent = 0;
        long received = 0;
        for (int round = 0; round < 2_000; round++) {
            while (sent < upstream.requested.get()) { // the upstream sends all it may
                subscriber.onNext((int) sent++);
            }
            final Integer m = mailbox.tryRecv(); // the consumer frees one slot
            assertThat(m).isNotNull();
            assertThat(m.intValue()).isEqualTo((int) received++);
        }
        assertThat(upstream.requests.get(0)).isEqualTo(64L); // the first request: the whole prefetch
        final List<Long> first = upstream.requests.subList(0, Math.min(10, upstream.requests.size()));
        for (long n : upstream.requests.subList(1, upstream.requests.size())) {
            assertThat(n).as("a request after the first (the first 10: %s)", first).isGreaterThanOrEqualTo(16L);
        }
        assertThat(upstream.requests.size()).as("requests (the first 10: %s)", first).isLessThanOrEqualTo(
                1 + 2_000 / 16 + 1);
    }

    @Test
    void shouldDeliverEverythingInOrderWhenTheExecutorPublisherBacksOffOrParks() throws Exception {
        for (WaitPolicy policy : List.of(WaitPolicy.park(), WaitPolicy.defaults(), WaitPolicy.backoff(0, 500))) {
            final ExecutorService executor = Executors.newSingleThreadExecutor();
            try {
                final Mailbox<Integer> mailbox = Mailboxes.bounded(32);
                final int n = 20_000;
                final List<Integer> received = new ArrayList<>(n);
                final CountDownLatch done = new CountDownLatch(1);
                final AtomicReference<Throwable> error = new AtomicReference<>();
                new MailboxPublisher<>(mailbox, 8, executor, policy).subscribe(new Subscriber<Integer>() {
                    private Subscription upstream;

                    @Override
                    public void onSubscribe(Subscription s) {
                        upstream = s;
                        s.request(16);
                    }

                    @Override
                    public void onNext(Integer item) {
                        received.add(item);
                        if (received.size() % 16 == 0) {
                            upstream.request(16);
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                        error.set(t);
                        done.countDown();
                    }

                    @Override
                    public void onComplete() {
                        done.countDown();
                    }
                });
                for (int i = 0; i < n; i++) {
                    mailbox.send(i);
                    if ((i & 2047) == 0) {
                        Thread.sleep(1); // idle periods: back-offs that end in a registration
                    }
                }
                mailbox.close();
                assertThat(done.await(30, TimeUnit.SECONDS)).as("policy %s", policy).isTrue();
                assertThat(error.get()).isNull();
                assertThat(received).hasSize(n);
                for (int i = 0; i < n; i++) {
                    assertThat(received.get(i)).isEqualTo(i);
                }
            } finally {
                executor.shutdownNow();
            }
        }
    }
}

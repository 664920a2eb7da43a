package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.WaitPolicy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Disposable;
import reactor.core.scheduler.Schedulers;

/**
 * The default fused poller's linger ({@code MailboxFluxSubscription}, "Waiting for data"): a poll that finds the
 * mailbox empty may spin for a budget its deliveries earned, and always ends by registering for the next send, so
 * an idle flux holds no thread and a later send still reaches it. What these tests assert holds whether or not a
 * given empty poll lingered (that depends on timing): the linger ends, the poller registers, nothing is lost.
 */
@Timeout(300)
class MailboxFluxLingerTest {
    @Test
    void shouldRegisterAfterTheLingerOnThePollingThread() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(1024);
        final MailboxFluxAllocationTest.CountingFusedSubscriber consumer =
                new MailboxFluxAllocationTest.CountingFusedSubscriber();
        consumer.deferred = true;
        MailboxFlux.from(mailbox).subscribe(consumer);
        for (int round = 0; round < 50; round++) {
            for (int i = 0; i < 1000; i++) {
                assertThat(mailbox.trySend(i)).isTrue();
            }
            consumer.drain(); // 1,000 polls earn the full budget; the empty poll lingers, then registers
            assertThat(consumer.count).isEqualTo(1000L * (round + 1));
            assertThat(mailbox.stats().consumerParked()).as("registered for the next send after the linger")
                    .isTrue();
        }
        final long signals = consumer.signals;
        assertThat(mailbox.trySend(1)).isTrue();
        assertThat(consumer.signals).as("the send after the linger signals 'poll now'").isEqualTo(signals + 1);
    }

    @Test
    void shouldDeliverEverythingAndGoIdleBetweenBurstsOnASharedScheduler() throws Exception {
        final int bursts = 200;
        final int burst = 250;
        final Mailbox<Integer> mailbox = Mailboxes.bounded(256);
        final AtomicLong next = new AtomicLong();
        final AtomicReference<String> wrong = new AtomicReference<>();
        final CountDownLatch done = new CountDownLatch(1);
        final Disposable subscription = MailboxFlux.from(mailbox).publishOn(Schedulers.parallel())
                .subscribe(v -> {
                    final long expected = next.getAndIncrement();
                    if (v != expected) {
                        wrong.compareAndSet(null, "got " + v + " expected " + expected);
                    }
                    if (expected == (long) bursts * burst - 1) {
                        done.countDown();
                    }
                }, e -> wrong.compareAndSet(null, e.toString()));
        try {
            int value = 0;
            for (int b = 0; b < bursts; b++) {
                for (int i = 0; i < burst; i++) {
                    mailbox.send(value++);
                }
                if (b % 20 == 19) {
                    // the producer pauses: the poller must end its linger and register, and the next send wake it
                    final long target = value;
                    Hang.awaitProgress(next::get, target, "burst " + b + " delivered", mailbox::toString);
                    awaitRegistered(mailbox);
                }
            }
            Hang.await(done, "every message delivered");
            assertThat(wrong.get()).isNull();
            awaitRegistered(mailbox);
        } finally {
            subscription.dispose();
        }
    }

    @Test
    void shouldNotRegisterForDataOnARequestWhileTheDownstreamIsStillPolling() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(64);
        final MailboxFluxAllocationTest.CountingFusedSubscriber consumer =
                new MailboxFluxAllocationTest.CountingFusedSubscriber();
        consumer.deferred = true;
        MailboxFlux.from(mailbox).subscribe(consumer);
        assertThat(mailbox.stats().consumerParked()).as("the first pass registers").isTrue();
        for (int i = 0; i < 3; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        for (int i = 0; i < 3; i++) {
            assertThat(consumer.queue.poll()).isEqualTo(i); // polling, not yet told "empty"
        }
        consumer.queue.request(1); // a replenishing request in the middle of the downstream's loop
        assertThat(mailbox.stats().consumerParked())
                .as("the pass that request ran leaves the registration to the downstream's next poll").isFalse();
        assertThat(consumer.queue.poll()).isNull(); // too little budget to linger: registers
        assertThat(mailbox.stats().consumerParked()).isTrue();
        final long signals = consumer.signals;
        assertThat(mailbox.trySend(9)).isTrue();
        assertThat(consumer.signals).as("the send after the empty poll signals 'poll now'").isEqualTo(signals + 1);
        assertThat(consumer.queue.poll()).isEqualTo(9);
    }

    @Test
    void shouldKeepAnExplicitPolicyInsteadOfTheLinger() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(64);
        final MailboxFluxAllocationTest.CountingFusedSubscriber consumer =
                new MailboxFluxAllocationTest.CountingFusedSubscriber();
        consumer.deferred = true;
        MailboxFlux.from(mailbox, 16, WaitPolicy.park()).subscribe(consumer);
        for (int i = 0; i < 64; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        consumer.drain();
        assertThat(consumer.count).isEqualTo(64L);
        assertThat(mailbox.stats().consumerParked()).isTrue();
    }

    /** The poller's linger is bounded: it registers for data within the hang timeout once nothing is sent. */
    private static void awaitRegistered(Mailbox<Integer> mailbox) throws InterruptedException {
        final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
        while (!mailbox.stats().consumerParked()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("hang: the poller never registered for data: " + mailbox.stats());
            }
            Thread.sleep(1);
        }
    }
}

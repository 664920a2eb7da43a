package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;

/**
 * The hooks {@link MailboxRing} gives the adapters: reservations, room and data notifications, close
 * listeners, end of stream, the consumer mark and the consumer role. Single-threaded where the contract is
 * about state; the notifications are also checked for the thread they run on.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class MailboxRingHooksTest {

    /** A wakeable that counts its wake-ups and remembers the thread of the last one. */
    private static final class CountingWakeable implements Wakeable {
        final AtomicInteger wakes = new AtomicInteger();
        final AtomicReference<Thread> lastThread = new AtomicReference<>();
        final CountDownLatch woken = new CountDownLatch(1);

        @Override
        public void wake() {
            lastThread.set(Thread.currentThread());
            wakes.incrementAndGet();
            woken.countDown();
        }
    }

    /** A consumer role whose cancellation the test controls. */
    private static final class TestRole implements ConsumerRole {
        volatile boolean cancelled;
        final AtomicInteger wakes = new AtomicInteger();

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public void wake() {
            wakes.incrementAndGet();
        }
    }

    private static MailboxRing<String> ring(int capacity) {
        final Mailbox<String> mb = Mailboxes.bounded(capacity);
        return MailboxRing.of(mb);
    }

    // ------------------------------------------------------------------ reservations

    @Test
    void shouldGrantAtMostTheFreeSlotsWhenReserving() {
        final MailboxRing<String> ring = ring(8);
        assertThat(ring.reserve(5)).isEqualTo(5);
        assertThat(ring.reserve(5)).isEqualTo(3);
        assertThat(ring.reserve(1)).isZero();
        assertThat(ring.reserve(0)).isZero();
        assertThat(ring.reserve(-1)).isZero();
        assertThat(ring.reserved()).isEqualTo(8);
        assertThat(ring.stats().reserved()).isEqualTo(8);

        // Note: full means occupied + reserved
        assertThat(ring.trySend("x")).isFalse();
        assertThat(ring.size()).isZero();

        for (int i = 0; i < 8; i++) {
            assertThat(ring.sendReserved("r" + i)).isTrue();
        }
        assertThat(ring.reserved()).isZero();
        assertThat(ring.size()).isEqualTo(8);
        assertThatThrownBy(() -> ring.sendReserved("no permit")).isExactlyInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("sendReserved without a reserved slot");
        assertThat(ring.size()).isEqualTo(8);
        assertThat(ring.tryRecv()).isEqualTo("r0");
    }

    @Test
    void shouldFreeRoomForOthersWhenPermitsReleased() {
        final MailboxRing<String> ring = ring(4);
        assertThat(ring.trySend("a")).isTrue();
        assertThat(ring.trySend("b")).isTrue();
        assertThat(ring.reserve(4)).isEqualTo(2);
        assertThat(ring.trySend("c")).isFalse();

        ring.releaseReserved(1);
        assertThat(ring.reserved()).isEqualTo(1);
        assertThat(ring.trySend("c")).isTrue();
        assertThat(ring.trySend("d")).isFalse();
        assertThat(ring.sendReserved("e")).isTrue();
        assertThat(ring.size()).isEqualTo(4);

        ring.releaseReserved(0); // nothing to return: no change
        ring.releaseReserved(-3);
        assertThat(ring.reserved()).isZero();
    }

    @Test
    void shouldReturnPermitWhenSendReservedFindsMailboxClosed() {
        final MailboxRing<String> ring = ring(4);
        assertThat(ring.reserve(2)).isEqualTo(2);
        ring.close();
        assertThat(ring.sendReserved("x")).isFalse();
        assertThat(ring.reserved()).isEqualTo(1);
        assertThat(ring.stats().rejectedClosed()).isEqualTo(1);
        assertThat(ring.reserve(1)).isZero();
        assertThat(ring.size()).isZero();
        assertThatThrownBy(() -> ring.sendReserved(null)).isExactlyInstanceOf(NullPointerException.class);
    }

    @Test
    void shouldKeepGrantingWhenReserveAndReleaseCycleOnEmptyMailbox() {
        final MailboxRing<String> ring = ring(1024);
        for (int cycle = 0; cycle < 200; cycle++) {
            assertThat(ring.reserve(1)).as("cycle %d", cycle).isEqualTo(1);
            ring.releaseReserved(1);
        }
    }

    @Test
    void shouldGrantEveryReservationWhenManyAreMadeBeforeAnySend() {
        final MailboxRing<String> ring = ring(1024);
        for (int i = 0; i < 100; i++) {
            assertThat(ring.reserve(1)).as("reservation %d", i).isEqualTo(1);
        }
        assertThat(ring.reserved()).isEqualTo(100);
    }

    @Test
    void shouldGrantAgainAfterAClaimWhenEpochWasExhausted() {
        // what the core does today: a claim resets the epoch, so reservations resume after any send
        final MailboxRing<String> ring = ring(1024);
        int granted = 0;
        for (int i = 0; i < 100; i++) {
            granted += ring.reserve(1);
        }
        assertThat(granted).isPositive();
        assertThat(ring.trySend("x")).isTrue();
        assertThat(ring.reserve(1)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ notifications

    @Test
    void shouldWakeRoomWaiterWhenConsumerReceives() {
        final MailboxRing<String> ring = ring(2);
        final CountingWakeable hasRoom = new CountingWakeable();
        assertThat(ring.roomTicket(hasRoom).await()).as("room now: retry at once").isFalse();

        assertThat(ring.trySend("a")).isTrue();
        assertThat(ring.trySend("b")).isTrue();
        final CountingWakeable waiter = new CountingWakeable();
        assertThat(ring.roomTicket(waiter).await()).isTrue();
        assertThat(waiter.wakes).hasValue(0);

        assertThat(ring.tryRecv()).isEqualTo("a");
        assertThat(waiter.wakes).hasValue(1);
        assertThat(waiter.lastThread).hasValue(Thread.currentThread());
    }

    @Test
    void shouldWakeRoomWaiterWhenPermitsReleasedOrMailboxCloses() {
        final MailboxRing<String> ring = ring(2);
        assertThat(ring.reserve(2)).isEqualTo(2);
        final CountingWakeable released = new CountingWakeable();
        assertThat(ring.roomTicket(released).await()).isTrue();
        ring.releaseReserved(1);
        assertThat(released.wakes).hasValue(1);

        assertThat(ring.trySend("a")).isTrue();
        final CountingWakeable closed = new CountingWakeable();
        assertThat(ring.roomTicket(closed).await()).isTrue();
        ring.close();
        assertThat(closed.wakes).hasValue(1);
        assertThat(ring.roomTicket(new CountingWakeable()).await()).as("closed: retry at once").isFalse();
    }

    @Test
    void shouldWakeCloseListenerOnceWhenClosedOrAtOnceWhenAlreadyClosed() {
        final MailboxRing<String> ring = ring(2);
        final CountingWakeable before = new CountingWakeable();
        ring.onClose(before);
        assertThat(before.wakes).hasValue(0);
        ring.closeExceptionally(new IOException("x"));
        ring.close();
        assertThat(before.wakes).hasValue(1);

        final CountingWakeable after = new CountingWakeable();
        ring.onClose(after);
        assertThat(after.wakes).hasValue(1);
        assertThat(before.wakes).hasValue(1);
    }

    @Test
    void shouldWakeDataWaiterOnProducerThreadWhenMessageArrives() throws Exception {
        final MailboxRing<String> ring = ring(2);
        final CountingWakeable waiter = new CountingWakeable();
        assertThat(ring.awaitData(waiter)).isTrue();
        assertThat(ring.stats().consumerParked()).isTrue();

        final Thread producer = new Thread(() -> ring.trySend("a"), "producer");
        producer.start();
        producer.join(Hang.TIMEOUT.toMillis());
        assertThat(waiter.woken.await(Hang.SECONDS, TimeUnit.SECONDS)).isTrue();
        assertThat(waiter.wakes).hasValue(1);
        assertThat(waiter.lastThread).hasValue(producer);

        assertThat(ring.trySend("b")).isTrue(); // registration was one-shot
        assertThat(waiter.wakes).hasValue(1);
        assertThat(ring.awaitData(new CountingWakeable())).as("data present: drain now").isFalse();
        assertThat(ring.stats().consumerParked()).isFalse();
    }

    @Test
    void shouldNotWakeDataWaiterWhenRegistrationCancelled() {
        final MailboxRing<String> ring = ring(2);
        final CountingWakeable waiter = new CountingWakeable();
        assertThat(ring.awaitData(waiter)).isTrue();
        ring.cancelAwaitData(waiter);
        assertThat(ring.trySend("a")).isTrue();
        assertThat(waiter.wakes).hasValue(0);
    }

    @Test
    void shouldWakeDataWaiterWhenClosedAndRefuseRegistrationAfterwards() {
        final MailboxRing<String> ring = ring(2);
        final CountingWakeable waiter = new CountingWakeable();
        assertThat(ring.awaitData(waiter)).isTrue();
        ring.close();
        assertThat(waiter.wakes).hasValue(1);
        assertThat(ring.awaitData(new CountingWakeable())).isFalse();
    }

    // ------------------------------------------------------------------ receive side

    @Test
    void shouldWakeParkedSenderOnlyThroughAfterReceiveWhenPolling() throws Exception {
        final MailboxRing<String> ring = ring(1);
        assertThat(ring.trySend("a")).isTrue();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread sender = new Thread(() -> {
            try {
                ring.send("b");
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "sender");
        sender.setDaemon(true);
        sender.start();
        while (ring.stats().parkedProducers() == 0) {
            Thread.sleep(1);
        }

        assertThat(ring.poll()).isEqualTo("a");
        ring.afterReceive(1);
        sender.join(Hang.TIMEOUT.toMillis());
        assertThat(sender.isAlive()).isFalse();
        assertThat(failure).hasValue(null);
        assertThat(ring.poll()).isEqualTo("b");
        assertThat(ring.poll()).isNull();
    }

    @Test
    void shouldReportEndOfStreamOnlyWhenClosedAndDrained() {
        final MailboxRing<String> ring = ring(2);
        assertThat(ring.endOfStream()).isFalse();
        assertThat(ring.trySend("a")).isTrue();
        ring.close();
        assertThat(ring.endOfStream()).isFalse();
        assertThat(ring.poll()).isEqualTo("a");
        assertThat(ring.endOfStream()).isTrue();

        final MailboxRing<String> failed = ring(2);
        final IOException cause = new IOException("x");
        failed.closeExceptionally(cause);
        assertThatThrownBy(failed::endOfStream).isExactlyInstanceOf(MailboxClosedException.class).hasCause(cause);
    }

    @Test
    void shouldFailUntimedBlockingSendOnlyInsideTheConsumersBatchWhenFull() throws InterruptedException {
        final MailboxRing<String> ring = ring(1);
        assertThat(ring.trySend("a")).isTrue();
        final Thread previous = ring.enterConsumer();
        try {
            assertThatThrownBy(() -> ring.send("b")).isExactlyInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> ring.send("b", ChronoUnit.FOREVER.getDuration()))
                    .as("a timeout too long to count is none").isExactlyInstanceOf(IllegalStateException.class);
            assertThat(ring.send("b", Duration.ofMillis(5))).as("a timed send times out").isFalse();
        } finally {
            ring.exitConsumer(previous);
        }
        assertThat(ring.send("b", Duration.ofMillis(5))).as("outside a batch: just a timeout").isFalse();
    }

    @Test
    void shouldRejectSecondConsumerThreadWhenBatchUnderWay() throws InterruptedException {
        final MailboxRing<String> ring = ring(2);
        assertThat(ring.trySend("a")).isTrue();
        final Thread previous = ring.enterConsumer();
        try {
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            final Thread second = new Thread(() -> {
                try {
                    ring.tryRecvMany(m -> { }, 1);
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "second consumer");
            second.start();
            second.join(Hang.TIMEOUT.toMillis());
            assertThat(failure.get()).isExactlyInstanceOf(IllegalStateException.class);
        } finally {
            ring.exitConsumer(previous);
        }
        assertThat(ring.tryRecv()).isEqualTo("a");
    }

    // ------------------------------------------------------------------ consumer role

    @Test
    void shouldGrantRoleToOneLiveConsumerAndQueueBehindCancelledHolder() {
        final MailboxRing<String> ring = ring(2);
        final TestRole first = new TestRole();
        final TestRole second = new TestRole();
        final TestRole third = new TestRole();

        assertThat(ring.attachConsumer(first)).isEqualTo(MailboxRing.ROLE_ACQUIRED);
        assertThat(ring.attachConsumer(second)).isEqualTo(MailboxRing.ROLE_REFUSED);

        first.cancelled = true; // still finishing its last delivery
        assertThat(ring.attachConsumer(second)).isEqualTo(MailboxRing.ROLE_QUEUED);
        assertThat(ring.attachConsumer(third)).as("a live successor is queued already")
                .isEqualTo(MailboxRing.ROLE_REFUSED);
        assertThat(ring.consumerRole()).isSameAs(first);

        ring.detachConsumer(first);
        assertThat(ring.consumerRole()).isSameAs(second);
        assertThat(second.wakes).hasValue(1);

        ring.detachConsumer(first); // not the holder: no effect
        assertThat(ring.consumerRole()).isSameAs(second);

        second.cancelled = true;
        ring.detachConsumer(second);
        assertThat(ring.consumerRole()).isNull();
        assertThat(ring.attachConsumer(third)).isEqualTo(MailboxRing.ROLE_ACQUIRED);
    }

    @Test
    void shouldReplaceCancelledQueuedSuccessorWhenNewcomerArrives() {
        final MailboxRing<String> ring = ring(2);
        final TestRole holder = new TestRole();
        final TestRole queued = new TestRole();
        final TestRole newcomer = new TestRole();
        assertThat(ring.attachConsumer(holder)).isEqualTo(MailboxRing.ROLE_ACQUIRED);
        holder.cancelled = true;
        assertThat(ring.attachConsumer(queued)).isEqualTo(MailboxRing.ROLE_QUEUED);
        queued.cancelled = true;

        assertThat(ring.attachConsumer(newcomer)).isEqualTo(MailboxRing.ROLE_QUEUED);
        ring.detachConsumer(holder);
        assertThat(ring.consumerRole()).isSameAs(newcomer);
        assertThat(newcomer.wakes).hasValue(1);
        assertThat(queued.wakes).hasValue(0);
    }

    // ------------------------------------------------------------------ batched reserved send

    @Test
    void shouldSendAReservedRunWithOneClaimAndReturnItsPermits() {
        final MailboxRing<String> ring = ring(8);
        assertThat(ring.reserve(5)).isEqualTo(5);
        assertThat(ring.trySend("x")).isTrue(); // 1 occupied + 5 reserved of 8
        assertThat(ring.sendReservedMany(List.of("skip", "a", "b", "c", "d"), 1, 4)).isEqualTo(3);
        assertThat(ring.reserved()).isEqualTo(2);
        assertThat(ring.size()).isEqualTo(4);
        final List<String> got = new ArrayList<>();
        ring.tryRecvMany(got::add, 16);
        assertThat(got).containsExactly("x", "a", "b", "c");
        assertThat(ring.stats().admitted()).isEqualTo(4L);
    }

    @Test
    void shouldRefuseAReservedRunLongerThanThePermitsWithoutAdmittingAnything() {
        final MailboxRing<String> ring = ring(8);
        assertThat(ring.reserve(2)).isEqualTo(2);
        assertThatThrownBy(() -> ring.sendReservedMany(List.of("a", "b", "c"), 0, 3))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("reserved");
        assertThat(ring.size()).isZero();
        assertThat(ring.reserved()).isEqualTo(2);
    }

    @Test
    void shouldRejectANullElementOfAReservedRunBeforeAnythingIsAdmitted() {
        final MailboxRing<String> ring = ring(8);
        assertThat(ring.reserve(3)).isEqualTo(3);
        assertThatThrownBy(() -> ring.sendReservedMany(Arrays.asList("a", null, "c"), 0, 3))
                .isInstanceOf(NullPointerException.class);
        assertThat(ring.size()).isZero();
        assertThat(ring.reserved()).isEqualTo(3);
    }

    @Test
    void shouldGiveTheRunsPermitsBackAndAdmitNothingWhenClosed() {
        final MailboxRing<String> ring = ring(8);
        assertThat(ring.reserve(3)).isEqualTo(3);
        ring.close();
        assertThat(ring.sendReservedMany(List.of("a", "b", "c"), 0, 3)).isZero();
        assertThat(ring.reserved()).isZero();
        assertThat(ring.size()).isZero();
        assertThat(ring.stats().rejectedClosed()).isEqualTo(1L);
        assertThat(ring.isTerminated()).isTrue();
    }
}

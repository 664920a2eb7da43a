package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The room-waiter queue of {@link RingWaiters}: a receive that frees {@code k} slots wakes {@code k} waiters, oldest
 * first, not all of them; a release of permits does the same; a close wakes everyone; a registration withdrawn
 * because room appeared takes no wake-up from the others. Wakeable waiters run on the waker's thread, so these
 * checks are exact; the threaded forms are in the jcstress suite and the concurrency tests.
 */
@Timeout(300)
class RingWaitersTest {
    private static MailboxRing<Integer> full(int capacity) {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(capacity);
        for (int i = 0; i < capacity; i++) {
            assertThat(mailbox.trySend(i)).isTrue();
        }
        return MailboxRing.of(mailbox);
    }

    @Test
    void shouldWakeOneWaiterPerFreedSlotOldestFirstWhenTheConsumerReceives() {
        final MailboxRing<Integer> ring = full(4);
        final List<Integer> woken = new CopyOnWriteArrayList<>();
        for (int i = 0; i < 6; i++) {
            final int id = i;
            assertThat(ring.roomTicket(() -> woken.add(id)).await()).isTrue();
        }
        assertThat(ring.tryRecv()).isZero();
        assertThat(woken).as("one slot freed: one waiter, the oldest").containsExactly(0);
        assertThat(ring.tryRecvMany(m -> { }, 2)).isEqualTo(2);
        assertThat(woken).as("two more slots: the next two").containsExactly(0, 1, 2);
        ring.close();
        assertThat(woken).as("the close wakes the rest").containsExactly(0, 1, 2, 3, 4, 5);
    }

    @Test
    void shouldWakeAsManyWaitersAsPermitsAreReleased() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        assertThat(ring.reserve(4)).isEqualTo(4);
        final AtomicInteger woken = new AtomicInteger();
        for (int i = 0; i < 5; i++) {
            assertThat(ring.roomTicket(woken::incrementAndGet).await()).isTrue();
        }
        ring.releaseReserved(3);
        assertThat(woken.get()).isEqualTo(3);
        ring.releaseReserved(1);
        assertThat(woken.get()).isEqualTo(4);
        assertThat(ring.stats().producerParks()).isEqualTo(5L);
    }

    @Test
    void shouldLeaveNoRegistrationBehindWhenRoomAppearedBeforeTheWait() {
        final MailboxRing<Integer> ring = full(2);
        assertThat(ring.tryRecv()).isZero();
        final AtomicInteger stale = new AtomicInteger();
        assertThat(ring.roomTicket(stale::incrementAndGet).await()).as("room: retry now").isFalse();
        final AtomicInteger waiter = new AtomicInteger();
        assertThat(ring.trySend(9)).isTrue();
        assertThat(ring.roomTicket(waiter::incrementAndGet).await()).isTrue();
        assertThat(ring.tryRecv()).isNotNull();
        assertThat(stale.get()).as("the withdrawn registration takes no wake-up").isZero();
        assertThat(waiter.get()).isEqualTo(1);
    }

    @Test
    void shouldLetTheNextWaiterInWhenAWokenTimedSendHasTimedOut() throws Exception {
        // a timed send that gives up must not take the room (or a wake-up) with it: the untimed one behind it gets in
        final MailboxRing<Integer> ring = full(1);
        final CountDownLatch gaveUp = new CountDownLatch(1);
        final Thread timed = new Thread(() -> {
            try {
                assertThat(ring.send(100, Duration.ofMillis(20))).isFalse();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                gaveUp.countDown();
            }
        });
        timed.start();
        Hang.await(gaveUp, "the timed send timing out");
        final CountDownLatch sent = new CountDownLatch(1);
        final Thread untimed = new Thread(() -> {
            try {
                ring.send(200);
                sent.countDown();
            } catch (InterruptedException | MailboxClosedException e) {
                // the test fails on the latch
            }
        });
        untimed.start();
        while (ring.stats().parkedProducers() == 0 && untimed.isAlive()) {
            Thread.onSpinWait(); // until it parks: then a receive must wake it
        }
        assertThat(ring.tryRecv()).isZero();
        Hang.await(sent, "the parked send");
        assertThat(ring.tryRecv()).isEqualTo(200);
        untimed.join(TimeUnit.SECONDS.toMillis(Hang.SECONDS));
        timed.join(TimeUnit.SECONDS.toMillis(Hang.SECONDS));
    }
}

package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxRing;
import org.junit.jupiter.api.Test;

/**
 * The reservation edge cases {@link MailboxModelTest} found (both fixed in the core since): the epoch that
 * saturates after 63 grants without a claim, and {@code sendReserved} without a permit. Plus the wake-up that the
 * epoch's renewal placeholder must not swallow.
 */
class ReservationHazardsTest {

    @Test
    void shouldRenewASaturatedEpochWithAPlaceholderTheConsumerSkips() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(1024);
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        for (int i = 0; i < 63; i++) {
            assertThat(ring.reserve(1)).as("grant %d", i).isEqualTo(1);
        }
        assertThat(ring.reserve(1)).as("the 64th grant, after renewing the epoch").isEqualTo(1);
        assertThat(mailbox.stats().admitted()).as("the placeholder slot").isEqualTo(1);
        assertThat(mailbox.size()).isEqualTo(1);
        assertThat(ring.sendReserved(7)).isTrue();
        assertThat(mailbox.tryRecv()).as("the placeholder is skipped").isEqualTo(7);
        assertThat(mailbox.stats().received()).isEqualTo(2);
        ring.releaseReserved(ring.reserved());
        assertThat(mailbox.stats().reserved()).isZero();
        assertThat(mailbox.size()).isZero();
    }

    /** Before the fix: after 63 reserve/release cycles with no claim in between, reserve granted 0 forever. */
    @Test
    void shouldGrantAReservationWhenEmptyAfterManyReserveReleaseCycles() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        for (int cycle = 0; cycle < 100; cycle++) {
            assertThat(ring.reserve(1)).as("cycle %d: empty mailbox, nothing reserved", cycle).isEqualTo(1);
            ring.releaseReserved(1);
        }
        assertThat(mailbox.tryRecv()).isNull();
        assertThat(mailbox.size()).as("the placeholder was freed by the receive").isZero();
    }

    /**
     * Before the fix: with room left, {@code sendReserved} without a permit succeeded and drove {@code reserved}
     * negative; a later {@code trySend} then claimed one slot past the capacity, overwrote an unread message and
     * left a slot that was never published (the consumer waited on it forever).
     */
    @Test
    void shouldRefuseSendReservedWithoutAPermitInsteadOfCorruptingTheRing() {
        final Mailbox<String> mailbox = Mailboxes.bounded(2);
        final MailboxRing<String> ring = MailboxRing.of(mailbox);
        assertThatThrownBy(() -> ring.sendReserved("a")).isInstanceOf(IllegalStateException.class)
                .hasMessage("sendReserved without a reserved slot: name=mailbox, reserved=0");
        assertThat(ring.reserved()).isZero();
        mailbox.trySend("b");
        mailbox.trySend("c");
        assertThat(mailbox.trySend("d")).as("full").isFalse();
        final List<String> got = new ArrayList<>();
        mailbox.tryRecvMany(got::add, 8);
        assertThat(got).containsExactly("b", "c");
        assertThat(mailbox.size()).isZero();
    }

    /**
     * The placeholder that renews a saturated epoch can take the last free slot, so {@code reserve} grants 0 and
     * the caller registers {@code awaitRoom}. A receive that frees only placeholders must still announce the room
     * (as a receive of a message does, through {@code afterReceive}); otherwise a subscriber that is the only
     * producer waits for room that nobody announces, while the consumer waits for data.
     *
     * <p>Found by this test and fixed: {@code tryRecv} and the batch drains called {@code afterReceive} only when
     * they returned a message, so a receive that freed only placeholders woke nobody. A poll that skips a
     * placeholder now announces the room itself ({@code afterSkip}).
     */
    @Test
    void shouldWakeARoomWaiterWhenAReceiveFreesOnlyAPlaceholder() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        for (int cycle = 0; cycle < 63; cycle++) {
            assertThat(ring.reserve(1)).isEqualTo(1);
            ring.releaseReserved(1);
        }
        assertThat(ring.reserve(1)).as("the placeholder took the only slot").isZero();
        assertThat(mailbox.size()).isEqualTo(1);
        final AtomicInteger woken = new AtomicInteger();
        assertThat(ring.roomTicket(woken::incrementAndGet).await()).as("registered: no room").isTrue();
        assertThat(mailbox.tryRecv()).isNull();
        assertThat(mailbox.size()).isZero();
        assertThat(woken.get()).as("the room freed by skipping the placeholder is announced").isEqualTo(1);
        assertThat(ring.reserve(1)).isEqualTo(1);
    }
}

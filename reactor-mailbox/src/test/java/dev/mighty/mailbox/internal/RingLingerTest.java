package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The consumer's bounded linger ({@link RingReceiver#linger(long, ConsumerRole)}): it ends when a message is
 * published, when the mailbox closes, when the role is cancelled, or when its time is spent, and it takes nothing
 * itself. Each wait here is unbounded on the linger's side (or zero), so the outcome never depends on how far
 * another thread got; the class timeout turns a linger that misses its event into a failure.
 */
@Timeout(60)
class RingLingerTest {
    /** Long enough that only the event under test can end the linger within the class timeout. */
    private static final long FOREVER = TimeUnit.HOURS.toNanos(1);

    @Test
    void shouldEndWhenAnotherThreadPublishesAndLeaveTheMessageToPoll() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        final CompletableFuture<Boolean> sent = CompletableFuture.supplyAsync(() -> {
            sleepQuietly(20);
            return mailbox.trySend(7);
        });
        final long spent = ring.linger(FOREVER, null);
        assertThat(spent).isBetween(0L, FOREVER);
        assertThat(sent.get(30, TimeUnit.SECONDS)).isTrue();
        assertThat(ring.poll()).as("the linger only looks; poll takes").isEqualTo(7);
        assertThat(ring.poll()).isNull();
    }

    @Test
    void shouldEndWhenTheMailboxCloses() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        final CompletableFuture<Void> closed = CompletableFuture.runAsync(() -> {
            sleepQuietly(20);
            mailbox.close();
        });
        ring.linger(FOREVER, null);
        closed.get(30, TimeUnit.SECONDS);
        assertThat(ring.poll()).isNull();
        assertThat(mailbox.isClosed()).isTrue();
    }

    @Test
    void shouldEndWhenTheRoleIsCancelled() throws Exception {
        final MailboxRing<Integer> ring = MailboxRing.of(Mailboxes.<Integer>bounded(8));
        final CancellableRole role = new CancellableRole();
        final CompletableFuture<Void> cancelled = CompletableFuture.runAsync(() -> {
            sleepQuietly(20);
            role.cancelled = true;
        });
        ring.linger(FOREVER, role);
        cancelled.get(30, TimeUnit.SECONDS);
        assertThat(role.isCancelled()).isTrue();
    }

    @Test
    void shouldReturnAtOnceWithNoTimeToSpend() {
        final MailboxRing<Integer> ring = MailboxRing.of(Mailboxes.<Integer>bounded(8));
        assertThat(ring.linger(0L, null)).isNotNegative();
        assertThat(ring.poll()).isNull();
    }

    @Test
    void shouldReturnAtOnceWhenAMessageIsAlreadyThere() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        assertThat(mailbox.trySend(1)).isTrue();
        final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
        ring.linger(FOREVER, null); // the class timeout fails a linger that does not see the published slot
        assertThat(ring.poll()).isEqualTo(1);
    }

    private static final class CancellableRole implements ConsumerRole {
        volatile boolean cancelled;

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public void wake() {
            // never registered
        }
    }

    private static void sleepQuietly(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

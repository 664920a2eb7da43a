package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A consumer callback that fails: the message it was given counts as received, the exception reaches the
 * caller unchanged, the messages after it stay in the mailbox in order, and the mailbox (including its
 * consumer mark) is usable at once, from any thread. A callback that blocks on its own full mailbox gets an
 * {@link IllegalStateException} instead of a deadlock.
 */
class ConsumerFaultTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @ParameterizedTest(name = "blocking={0}")
    @ValueSource(booleans = {false, true})
    void shouldCountTheMessageAsReceivedAndKeepTheRestWhenTheSinkThrows(boolean blocking) throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        for (int i = 0; i < 6; i++) {
            mailbox.trySend(i);
        }
        final IllegalArgumentException boom = new IllegalArgumentException("sink failed");
        final List<Integer> got = new ArrayList<>();
        final Consumer<Integer> sink = m -> {
            got.add(m);
            if (m == 2) {
                throw boom;
            }
        };
        assertThatThrownBy(() -> {
            if (blocking) {
                mailbox.recvMany(sink, 8);
            } else {
                mailbox.tryRecvMany(sink, 8);
            }
        }).isSameAs(boom);

        assertThat(got).containsExactly(0, 1, 2);
        final MailboxStats stats = mailbox.stats();
        assertThat(stats.received()).as("the failed message counts as received").isEqualTo(3);
        assertThat(stats.size()).isEqualTo(3);
        assertReceivableFromAnotherThread(mailbox, List.of(3, 4, 5));
    }

    @ParameterizedTest(name = "blocking={0}")
    @ValueSource(booleans = {false, true})
    void shouldCountTheFrameAsReceivedAndKeepTheRestWhenTheHandlerThrows(boolean blocking) throws Exception {
        final FrameMailbox mailbox = Mailboxes.frames(8);
        final ByteBuffer payload = ByteBuffer.allocate(100);
        for (int i = 0; i < 6; i++) {
            mailbox.trySend(0, i, SequenceChecker.payload(payload, 0, 40L + i * 3));
        }
        final IllegalArgumentException boom = new IllegalArgumentException("handler failed");
        final List<Long> got = new ArrayList<>();
        final FrameView[] view = new FrameView[1];
        final FrameHandler handler = v -> {
            view[0] = v;
            got.add(v.correlationId());
            if (v.correlationId() == 2) {
                throw boom;
            }
        };
        assertThatThrownBy(() -> {
            if (blocking) {
                mailbox.recvFrames(handler, 8);
            } else {
                mailbox.tryRecvFrames(handler, 8);
            }
        }).isSameAs(boom);

        assertThat(got).containsExactly(0L, 1L, 2L);
        assertThatThrownBy(view[0]::correlationId).as("the view is unbound after a failure too")
                .isInstanceOf(IllegalStateException.class);
        assertThat(mailbox.stats().received()).isEqualTo(3);
        final List<Long> rest = new ArrayList<>();
        final Thread other = new Thread(() -> mailbox.tryRecvFrames(v -> rest.add(v.correlationId()), 8));
        other.start();
        other.join();
        assertThat(rest).as("the rest, in order, from another thread").containsExactly(3L, 4L, 5L);
        assertThat(mailbox.trySend(MessageFrame.of(1, 9L))).isTrue();
        assertThat(mailbox.recv()).isEqualTo(MessageFrame.of(1, 9L));
    }

    @Test
    void shouldThrowInsteadOfDeadlockingWhenTheSinkSendsIntoItsOwnFullMailbox() {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
            mailbox.trySend(0);
            mailbox.trySend(1);
            final List<Integer> got = new ArrayList<>();
            assertThatThrownBy(() -> mailbox.tryRecvMany(m -> {
                got.add(m);
                try {
                    mailbox.send(10 + m); // the first fits in the slot just freed, the second cannot
                    mailbox.send(20 + m);
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            }, 8)).isInstanceOf(IllegalStateException.class)
                    .hasMessage("send would wait forever: the mailbox is full and the caller is its consumer, the only "
                            + "thread that can make room: name=mailbox, capacity=2");
            assertThat(got).containsExactly(0);
            assertReceivableFromAnotherThread(mailbox, List.of(1, 10));
        });
    }

    @Test
    void shouldThrowInsteadOfDeadlockingWhenTheHandlerSendsAFrameIntoItsOwnFullMailbox() {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final FrameMailbox mailbox = Mailboxes.frames(1);
            mailbox.trySend(MessageFrame.of(1, 1L));
            final AtomicReference<Throwable> untimed = new AtomicReference<>();
            final AtomicReference<Boolean> timed = new AtomicReference<>();
            assertThat(mailbox.tryRecvFrames(v -> {
                try {
                    mailbox.send(2, 2L, ByteBuffer.allocate(60)); // no room: the slot is freed after onFrame returns
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                } catch (IllegalStateException e) {
                    untimed.set(e);
                }
                try {
                    // a timed send cannot wait forever: it waits out its timeout and reports false
                    timed.set(mailbox.send(MessageFrame.of(3, 3L), Duration.ofMillis(20)));
                } catch (InterruptedException ie) {
                    throw new AssertionError(ie);
                }
            }, 1)).isEqualTo(1);
            assertThat(untimed.get()).as("the untimed zero-garbage send is refused")
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("would wait forever");
            assertThat(timed.get()).as("the timed send times out").isFalse();
            assertThat(mailbox.stats().received()).isEqualTo(1);
            assertThat(mailbox.size()).isZero();
            assertThat(mailbox.trySend(MessageFrame.of(4, 4L))).isTrue();
            assertThat(mailbox.recv()).isEqualTo(MessageFrame.of(4, 4L));
        });
    }

    /** The consumer mark was restored: another thread can receive the rest, in order. */
    static <T> void assertReceivableFromAnotherThread(Mailbox<T> mailbox, List<T> expected) throws Exception {
        final List<T> rest = new ArrayList<>();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread other = new Thread(() -> {
            try {
                mailbox.tryRecvMany(rest::add, 64);
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "next-consumer");
        other.start();
        other.join();
        assertThat(failure.get()).isNull();
        assertThat(rest).containsExactlyElementsOf(expected);
        assertThat(mailbox.size()).isZero();
    }
}

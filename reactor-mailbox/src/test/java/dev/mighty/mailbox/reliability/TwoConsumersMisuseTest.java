package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Misuse: two threads in batched receives on one mailbox at once. The ring marks the thread inside a batch
 * ({@code MailboxRing.enterConsumer}); a second thread entering one while the mark is set gets
 * {@link IllegalStateException} ("two consumers at once") before it takes anything. The check is best effort
 * (a plain field: two consumers entering at the same instant may miss each other), so the test gives the
 * misuse an overlap it cannot miss: the first consumer holds its batch open until the second is caught. Single
 * {@code tryRecv}/{@code recv} calls are not checked (that would cost a write per message); see
 * {@code docs/reliability.md}.
 */
class TwoConsumersMisuseTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    enum Receive { TRY_RECV_MANY, RECV_MANY, TRY_RECV_FRAMES, RECV_FRAMES }

    @ParameterizedTest
    @EnumSource(Receive.class)
    void shouldReportASecondThreadEnteringABatchedReceive(Receive receive) {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final boolean frames = receive == Receive.TRY_RECV_FRAMES || receive == Receive.RECV_FRAMES;
            final FrameMailbox frameMailbox = frames ? Mailboxes.frames(64) : null;
            final Mailbox<Integer> refs = frames ? null : Mailboxes.bounded(64);
            final Mailbox<?> mailbox = frames ? frameMailbox : refs;
            final AtomicBoolean stop = new AtomicBoolean();
            final AtomicReference<Throwable> caught = new AtomicReference<>();
            final List<Thread> threads = new ArrayList<>();
            threads.add(new Thread(() -> {
                final ByteBuffer empty = ByteBuffer.allocate(0);
                for (int i = 0; !stop.get(); i++) {
                    final boolean sent = frames ? frameMailbox.trySend(0, i, empty) : refs.trySend(i);
                    if (!sent) {
                        LockSupport.parkNanos(50_000L);
                    }
                }
            }, "producer"));
            // The first consumer holds its batch open (its sink waits) until the second has been caught; the second
            // starts only once the first is inside that batch. So the two always overlap, whatever the scheduler
            // does: the consumer mark is a plain field, and the latch orders its write before the second's read.
            final CountDownLatch insideBatch = new CountDownLatch(1);
            final Runnable holdBatch = () -> {
                insideBatch.countDown();
                final long deadline = System.nanoTime() + TIMEOUT.toNanos();
                while (caught.get() == null && !stop.get() && System.nanoTime() - deadline < 0) {
                    slow();
                }
            };
            for (int c = 0; c < 2; c++) {
                final boolean first = c == 0;
                final Runnable inBatch = first ? holdBatch : TwoConsumersMisuseTest::slow;
                threads.add(new Thread(() -> {
                    try {
                        if (!first) {
                            Hang.await(insideBatch, "the first consumer inside a batch");
                        }
                        while (!stop.get()) {
                            switch (receive) {
                                case TRY_RECV_MANY -> refs.tryRecvMany(m -> inBatch.run(), 16);
                                case RECV_MANY -> refs.recvMany(m -> inBatch.run(), 16);
                                case TRY_RECV_FRAMES -> frameMailbox.tryRecvFrames(v -> inBatch.run(), 16);
                                case RECV_FRAMES -> frameMailbox.recvFrames(v -> inBatch.run(), 16);
                            }
                        }
                    } catch (Throwable t) {
                        caught.compareAndSet(null, t);
                        stop.set(true);
                    }
                }, "consumer-" + c));
            }
            threads.forEach(Thread::start);
            InterruptFaultTest.awaitTrue(() -> caught.get() != null, "the second consumer to be reported");
            stop.set(true);
            mailbox.close();
            for (Thread t : threads) {
                // NOTE: two misused consumers may both park in recvMany, and the single consumer slot holds one of
                // them: the other is woken by nobody. That is the misuse's cost; the interrupt ends the test.
                t.interrupt();
                t.join();
            }

            // NOTE: on a FrameMailbox tryRecvFrames checks the consumer mark first ("two consumers at once"), but a
            // single receive (tryRecv/recv, no mark) by the second thread meets the re-entrance check instead (the
            // shared FrameView is bound while the first thread is inside onFrame). Either way: IllegalStateException,
            // nothing taken.
            assertThat(caught.get()).isInstanceOf(IllegalStateException.class)
                    .hasMessageEndingWith("name=" + (frames ? "frames" : "mailbox"));
            if (frames) {
                assertThat(caught.get().getMessage()).containsAnyOf("two consumers at once",
                        "receive from inside FrameHandler.onFrame");
            } else {
                assertThat(caught.get()).hasMessageContaining("two consumers at once");
            }
            // Nothing is asserted about the messages: if the two consumers overlapped before one was caught, the
            // ring's consumer state is undefined. The report is a diagnostic, not a recovery.
        });
    }

    private static void slow() {
        LockSupport.parkNanos(200_000L);
    }
}

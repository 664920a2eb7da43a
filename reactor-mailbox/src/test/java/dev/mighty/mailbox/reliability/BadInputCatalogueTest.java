package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.FrameView;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.SpecProbes;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.rs.MailboxProcessor;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.publisher.TestPublisher;

/**
 * The bad-input catalogue of {@code docs/reliability.md}: every public entry point fed each bad input it can get
 * (null, non-positive sizes, oversized payloads, a closed mailbox, negative timeouts, an interrupted thread, a
 * subscriber or upstream that breaks the spec), with the documented outcome asserted exactly (exception type and
 * key=value message) and the mailbox checked unchanged or consistent afterwards. Rows proven elsewhere name
 * their test in the document.
 */
@ExtendWith(SpecProbes.class)
class BadInputCatalogueTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;
    private static final String MAX = String.valueOf(Mailboxes.MAX_CAPACITY);

    // ------------------------------------------------------------------ construction

    @ParameterizedTest
    @ValueSource(ints = {0, -1, Integer.MIN_VALUE, (1 << 30) + 1, Integer.MAX_VALUE})
    void shouldRejectACapacityOutOfRange(int capacity) {
        final String message = "capacity: " + capacity + " (expected: 1 .. " + MAX + ")";
        assertThatThrownBy(() -> Mailboxes.bounded(capacity)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> Mailboxes.builder().capacity(capacity)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> Mailboxes.frames(capacity)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("capacity: " + capacity + " (expected: 1 .. ");
    }

    @Test
    void shouldRoundACapacityUpToAPowerOfTwo() {
        assertThat(Mailboxes.bounded(1).capacity()).isEqualTo(1);
        assertThat(Mailboxes.bounded(3).capacity()).isEqualTo(4);
        assertThat(Mailboxes.frames(1000).capacity()).isEqualTo(1024);
    }

    @Test
    void shouldRejectAFrameMailboxLargerThanOneDirectBuffer() {
        assertThatThrownBy(() -> Mailboxes.frames((1 << 24) + 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageEndingWith("for a FrameMailbox)");
    }

    @Test
    void shouldRejectBadBuilderSettings() {
        assertThatThrownBy(() -> Mailboxes.builder().name(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("name");
        assertThatThrownBy(() -> Mailboxes.builder().maxPayload(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxPayload: -1 (expected: >= 0)");
        assertThatThrownBy(() -> Mailboxes.builder().maxRetainedSpill(-1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("maxRetainedSpill: -1 (expected: >= 0)");
        assertThatThrownBy(() -> Mailboxes.frames(8, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxPayload: -1 (expected: 0 .. " + (Integer.MAX_VALUE - 16) + ")");
        assertThatThrownBy(() -> Mailboxes.frames(8, Integer.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("maxPayload: " + Integer.MAX_VALUE);
    }

    @Test
    void shouldRejectANullFramePayload() {
        assertThatThrownBy(() -> MessageFrame.of(1, 2L, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("payload");
    }

    // ------------------------------------------------------------------ send side

    @Test
    void shouldRejectNullMessagesBeforeAdmittingAnything() {
        final Mailbox<String> mailbox = Mailboxes.bounded(4);
        assertThatThrownBy(() -> mailbox.trySend(null)).isInstanceOf(NullPointerException.class).hasMessage("msg");
        assertThatThrownBy(() -> mailbox.send(null)).isInstanceOf(NullPointerException.class).hasMessage("msg");
        assertThatThrownBy(() -> mailbox.send(null, Duration.ZERO)).isInstanceOf(NullPointerException.class)
                .hasMessage("msg");
        mailbox.close();
        assertThatThrownBy(() -> mailbox.trySend(null)).as("checked before the closed state")
                .isInstanceOf(NullPointerException.class);
        assertThat(mailbox.stats().admitted()).isZero();
        assertThat(mailbox.stats().rejectedClosed()).isZero();
    }

    @Test
    void shouldRejectBadSendTimeouts() {
        final Mailbox<String> mailbox = Mailboxes.bounded(4);
        assertThatThrownBy(() -> mailbox.send("a", null)).isInstanceOf(NullPointerException.class)
                .hasMessage("timeout");
        assertThatThrownBy(() -> mailbox.send("a", Duration.ofNanos(-1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timeout: PT-0.000000001S (expected: >= 0)");
        assertThat(mailbox.size()).isZero();
    }

    @Test
    void shouldTreatAZeroTimeoutAsTryAndAHugeOneAsNoDeadline() throws InterruptedException {
        final Mailbox<String> mailbox = Mailboxes.bounded(1);
        assertThat(mailbox.send("a", Duration.ofSeconds(Long.MAX_VALUE))).isTrue();
        assertThat(mailbox.send("b", Duration.ZERO)).as("full: a zero timeout fails at once").isFalse();
        assertThat(mailbox.stats().refused()).isEqualTo(1);
        assertThat(mailbox.recv(Duration.ofSeconds(Long.MAX_VALUE))).isEqualTo("a");
        assertThat(mailbox.recv(Duration.ZERO)).as("empty: a zero timeout returns at once").isNull();
        assertThat(mailbox.isTerminated()).isFalse();
    }

    @Test
    void shouldRejectOversizedPayloadsBeforeAdmittingAnything() {
        final FrameMailbox frames = Mailboxes.frames(4, 200);
        final String message = "payload: 201 bytes (expected: <= maxPayload 200)";
        final MessageFrame big = MessageFrame.of(1, 2L, new byte[201]);
        assertThatThrownBy(() -> frames.trySend(big)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> frames.send(big)).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
        assertThatThrownBy(() -> frames.send(big, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        final ByteBuffer buffer = ByteBuffer.allocate(300).position(50).limit(251);
        assertThatThrownBy(() -> frames.trySend(1, 2L, buffer)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThatThrownBy(() -> frames.send(1, 2L, buffer)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
        assertThat(buffer.position()).isEqualTo(50);
        assertThatThrownBy(() -> frames.trySend(1, 2L, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("payload");
        assertThat(frames.stats().admitted()).isZero();
        assertThat(frames.trySend(MessageFrame.of(1, 2L, new byte[200]))).as("the limit itself is accepted").isTrue();
    }

    @Test
    void shouldRejectBadFrameBatchesBeforeAdmittingAnything() {
        assertThatThrownBy(() -> new FrameBatch(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxFrames: 0 (expected: > 0)");
        final FrameBatch batch = new FrameBatch(2).add(1, 1L, ByteBuffer.allocate(10));
        assertThatThrownBy(() -> batch.add(1, 2L, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("payload");
        batch.add(1, 2L, ByteBuffer.allocate(201));
        assertThatThrownBy(() -> batch.add(1, 3L, ByteBuffer.allocate(1))).isInstanceOf(IllegalStateException.class)
                .hasMessage("batch full: maxFrames=2 (send it, then clear it)");
        final FrameMailbox frames = Mailboxes.frames(4, 200);
        assertThatThrownBy(() -> frames.trySendMany(batch, 0, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("batch frame: index=1, payload: 201 bytes (expected: <= maxPayload 200): nothing was "
                        + "admitted");
        assertThatThrownBy(() -> frames.sendMany(batch, 0, 2, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> frames.trySendMany(batch, 0, 3)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessage("from: 0, to: 3 (expected: 0 <= from <= to <= 2)");
        assertThatThrownBy(() -> frames.trySendMany(batch, 2, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("from: 2 > to: 1");
        assertThatThrownBy(() -> frames.trySendMany((FrameBatch) null, 0, 0)).isInstanceOf(NullPointerException.class)
                .hasMessage("batch");
        assertThat(frames.stats().admitted()).isZero();
        assertThat(frames.trySendMany(batch, 0, 1)).as("the frame before the oversized one, alone").isEqualTo(1);
    }

    @Test
    void shouldRejectSendsOnAClosedMailboxWithTheCause() throws InterruptedException {
        final Mailbox<String> closed = Mailboxes.<String>builder().capacity(4).name("orders").build();
        closed.close();
        assertThatThrownBy(() -> closed.trySend("a")).isInstanceOf(MailboxClosedException.class)
                .hasMessage("trySend on a closed mailbox: name=orders").hasNoCause();
        assertThatThrownBy(() -> closed.send("a")).isInstanceOf(MailboxClosedException.class)
                .hasMessage("send on a closed mailbox: name=orders");
        assertThatThrownBy(() -> closed.send("a", Duration.ofSeconds(1))).isInstanceOf(MailboxClosedException.class)
                .hasMessage("send on a closed mailbox: name=orders");
        assertThat(closed.stats().rejectedClosed()).isEqualTo(3);

        final FrameMailbox failed = Mailboxes.frames(4);
        final IllegalStateException cause = new IllegalStateException("upstream failed");
        failed.closeExceptionally(cause);
        assertThatThrownBy(() -> failed.trySend(1, 2L, ByteBuffer.allocate(3)))
                .isInstanceOf(MailboxClosedException.class).hasCause(cause);
        assertThatThrownBy(() -> failed.send(MessageFrame.of(1, 2L))).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        final MailboxRing<MessageFrame> ring = MailboxRing.of(failed);
        assertThatThrownBy(() -> ring.sendReserved(MessageFrame.of(1, 2L))).as("no permit: a caller bug, closed or not")
                .isInstanceOf(IllegalStateException.class);
        assertThat(failed.stats().reserved()).isZero();
    }

    @Test
    void shouldWakeAParkedSenderWithMailboxClosedExceptionOnClose() {
        assertTimeoutPreemptively(TIMEOUT, () -> {
            final Mailbox<String> mailbox = Mailboxes.bounded(1);
            mailbox.trySend("a");
            final AtomicReference<Throwable> outcome = new AtomicReference<>();
            final Thread sender = new Thread(() -> {
                try {
                    mailbox.send("b");
                } catch (Throwable t) {
                    outcome.set(t);
                }
            });
            sender.start();
            InterruptFaultTest.awaitTrue(() -> mailbox.stats().parkedProducers() == 1, "the sender to park");
            final RuntimeException cause = new RuntimeException("shutdown");
            mailbox.closeExceptionally(cause);
            sender.join();
            assertThat(outcome.get()).isInstanceOf(MailboxClosedException.class).hasCause(cause);
            assertThat(mailbox.tryRecv()).isEqualTo("a");
            assertThat(mailbox.isTerminated()).isTrue();
        });
    }

    @Test
    void shouldThrowInterruptedExceptionFromBlockingCallsOnlyAndKeepTheFlagForTryCalls() throws Exception {
        final Mailbox<String> mailbox = Mailboxes.bounded(4);
        final FrameMailbox frames = Mailboxes.frames(4);
        mailbox.trySend("x");
        final List<ThrowingCall> blocking = List.of(
                () -> mailbox.send("a"), () -> mailbox.send("a", Duration.ofSeconds(1)),
                mailbox::recv, () -> mailbox.recv(Duration.ofSeconds(1)), () -> mailbox.recvMany(m -> { }, 1),
                () -> frames.send(1, 2L, ByteBuffer.allocate(1)), () -> frames.recvFrames(v -> { }, 1));
        for (ThrowingCall call : blocking) {
            Thread.currentThread().interrupt();
            assertThatThrownBy(call::call).isInstanceOf(InterruptedException.class);
            assertThat(Thread.interrupted()).as("the flag is consumed by the exception").isFalse();
        }
        assertThat(mailbox.size()).as("data present did not matter; nothing taken or added").isEqualTo(1);
        Thread.currentThread().interrupt();
        try {
            assertThat(mailbox.trySend("y")).isTrue();
            assertThat(mailbox.tryRecv()).isEqualTo("x");
            assertThat(mailbox.tryRecvMany(m -> { }, 8)).isEqualTo(1);
            assertThat(Thread.currentThread().isInterrupted()).as("try calls neither check nor clear it").isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    // ------------------------------------------------------------------ receive side

    @Test
    void shouldRejectBadReceiveArguments() {
        final Mailbox<String> mailbox = Mailboxes.bounded(4);
        final FrameMailbox frames = Mailboxes.frames(4);
        mailbox.trySend("a");
        assertThatThrownBy(() -> mailbox.tryRecvMany(null, 1)).isInstanceOf(NullPointerException.class)
                .hasMessage("sink");
        assertThatThrownBy(() -> mailbox.recvMany(null, 1)).isInstanceOf(NullPointerException.class)
                .hasMessage("sink");
        assertThatThrownBy(() -> mailbox.tryRecvMany(m -> { }, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThatThrownBy(() -> mailbox.recvMany(m -> { }, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThatThrownBy(() -> frames.tryRecvFrames(null, 1)).isInstanceOf(NullPointerException.class)
                .hasMessage("handler");
        assertThatThrownBy(() -> frames.recvFrames(v -> { }, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("max: -1 (expected: >= 0)");
        assertThatThrownBy(() -> mailbox.recv(null)).isInstanceOf(NullPointerException.class).hasMessage("timeout");
        assertThatThrownBy(() -> mailbox.recv(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timeout: PT-0.001S (expected: >= 0)");
        assertThat(mailbox.tryRecvMany(m -> { }, 0)).as("max 0: nothing").isZero();
        assertThat(mailbox.size()).as("nothing taken by a rejected call").isEqualTo(1);
    }

    @Test
    void shouldReportEndOfStreamAsDocumented() throws InterruptedException {
        final Mailbox<String> normal = Mailboxes.bounded(4);
        normal.close();
        assertThat(normal.tryRecv()).isNull();
        assertThat(normal.recv()).isNull();
        assertThat(normal.recv(Duration.ofSeconds(1))).isNull();
        assertThat(normal.isTerminated()).as("tells end of stream from a timeout").isTrue();
        assertThat(normal.tryRecvMany(m -> { }, 4)).isZero();
        assertThat(normal.recvMany(m -> { }, 4)).isZero();

        final Mailbox<String> failed = Mailboxes.<String>builder().capacity(4).name("jobs").build();
        final RuntimeException cause = new RuntimeException("producer crashed");
        failed.closeExceptionally(cause);
        assertThat(failed.tryRecv()).as("try calls report nothing, never throw").isNull();
        assertThat(failed.tryRecvMany(m -> { }, 4)).isZero();
        assertThatThrownBy(failed::recv).isInstanceOf(MailboxClosedException.class)
                .hasMessage("mailbox closed exceptionally and drained: name=jobs").hasCause(cause);
        assertThatThrownBy(() -> failed.recvMany(m -> { }, 4)).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
        assertThatThrownBy(() -> failed.recv(Duration.ZERO)).isInstanceOf(MailboxClosedException.class)
                .hasCause(cause);
    }

    @Test
    void shouldRejectANullCauseAndKeepTheFirstClose() {
        final Mailbox<String> mailbox = Mailboxes.bounded(4);
        assertThatThrownBy(() -> mailbox.closeExceptionally(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("cause");
        assertThat(mailbox.isClosed()).as("a rejected close closes nothing").isFalse();
        mailbox.close();
        mailbox.close();
        mailbox.closeExceptionally(new RuntimeException("late"));
        assertThat(mailbox.closeCause()).as("the first close decides").isNull();
    }

    @Test
    void shouldRejectMisuseOfTheFrameView() {
        final FrameMailbox frames = Mailboxes.frames(4);
        frames.trySend(MessageFrame.of(1, 2L, new byte[60]));
        frames.trySend(MessageFrame.of(1, 3L, new byte[60]));
        final FrameView[] kept = new FrameView[1];
        frames.tryRecvFrames(view -> {
            kept[0] = view;
            assertThatThrownBy(() -> view.getPayload(new byte[59], 0)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> view.getPayload(new byte[60], 1)).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> view.getPayload(ByteBuffer.allocate(59)))
                    .isInstanceOf(BufferOverflowException.class);
            assertThatThrownBy(() -> view.getPayload((byte[]) null, 0)).isInstanceOf(NullPointerException.class)
                    .hasMessage("dst");
        }, 1);
        for (ThrowingCall call : List.<ThrowingCall>of(kept[0]::kind, kept[0]::correlationId, kept[0]::payloadLength,
                kept[0]::toFrame, () -> kept[0].getPayload(new byte[64], 0))) {
            assertThatThrownBy(call::call).isInstanceOf(IllegalStateException.class)
                    .hasMessage("FrameView used outside FrameHandler.onFrame");
        }
        assertThat(frames.tryRecv()).as("the next frame is intact").isEqualTo(MessageFrame.of(1, 3L, new byte[60]));
    }

    @Test
    void shouldRefuseAReceiveFromInsideTheFrameHandler() throws InterruptedException {
        final FrameMailbox frames = Mailboxes.frames(4);
        frames.trySend(MessageFrame.of(1, 1L));
        frames.trySend(MessageFrame.of(1, 2L));
        final List<Throwable> refused = new ArrayList<>();
        frames.tryRecvFrames(view -> {
            for (ThrowingCall call : List.<ThrowingCall>of(frames::tryRecv, () -> frames.tryRecvFrames(v -> { }, 1),
                    () -> frames.tryRecvMany(f -> { }, 1))) {
                try {
                    call.call();
                } catch (Throwable t) {
                    refused.add(t);
                }
            }
        }, 1);
        assertThat(refused).hasSize(3).allSatisfy(t -> assertThat(t).isInstanceOf(IllegalStateException.class)
                .hasMessage("receive from inside FrameHandler.onFrame: name=frames"));
        assertThat(frames.recv()).as("the slot under the handler was not handed out twice")
                .isEqualTo(MessageFrame.of(1, 2L));
    }

    // ------------------------------------------------------------------ Reactive Streams and Reactor faces

    @Test
    void shouldRejectBadAdapterArguments() {
        final Mailbox<String> mailbox = Mailboxes.bounded(8);
        assertThatThrownBy(() -> new MailboxPublisher<>(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> new MailboxPublisher<>(mailbox, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("batchSize: 0 (expected: >= 1)");
        assertThatThrownBy(() -> new MailboxPublisher<>(mailbox, 1, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("executor");
        assertThatThrownBy(() -> new MailboxSubscriber<>(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> new MailboxSubscriber<>(mailbox, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prefetch: 0 (expected: 1 .. 8)");
        assertThatThrownBy(() -> new MailboxSubscriber<>(mailbox, 9)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prefetch: 9 (expected: 1 .. 8)");
        assertThatThrownBy(() -> new MailboxProcessor<>(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> new MailboxProcessor<>(mailbox, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("batchSize: -1 (expected: >= 1)");
        assertThatThrownBy(() -> MailboxFlux.from((Mailbox<String>) null)).isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> MailboxFlux.from(mailbox, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("batchSize: 0 (expected: >= 1)");
        assertThatThrownBy(() -> MailboxFlux.sendAll(null, mailbox)).isInstanceOf(NullPointerException.class)
                .hasMessage("source");
        assertThatThrownBy(() -> MailboxFlux.sendAll(Flux.just("a"), null)).isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> MailboxFlux.sendAll(Flux.just("a"), mailbox, 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("prefetch: 0 (expected: 1 .. 8)");
        assertThat(MailboxRing.of(mailbox).consumerRole()).as("nothing attached").isNull();
    }

    @Test
    void shouldRejectANullSubscriber() {
        final Mailbox<String> mailbox = Mailboxes.bounded(8);
        for (Publisher<String> face : List.of(new MailboxPublisher<>(mailbox), new MailboxProcessor<>(mailbox))) {
            assertThatThrownBy(() -> face.subscribe(null)).as("§1.9 %s", face).isInstanceOf(NullPointerException.class)
                    .hasMessage("subscriber");
        }
        // Flux.subscribe checks first, with Reactor's own message
        assertThatThrownBy(() -> MailboxFlux.from(mailbox).subscribe((Subscriber<String>) null))
                .isInstanceOf(NullPointerException.class);
        assertThat(MailboxRing.of(mailbox).consumerRole()).isNull();
    }

    @ParameterizedTest
    @ValueSource(longs = {0L, -1L, Long.MIN_VALUE})
    void shouldSignalIllegalArgumentExceptionOnANonPositiveRequest(long n) {
        for (int face = 0; face < 2; face++) {
            final Mailbox<Long> mailbox = Mailboxes.bounded(8);
            mailbox.trySend(1L);
            final Publisher<Long> publisher = face == 0 ? new MailboxPublisher<>(mailbox) : MailboxFlux.from(mailbox);
            final StressSubscriber<Long> subscriber = new StressSubscriber<>(0);
            publisher.subscribe(subscriber);
            subscriber.request(n);
            assertThat(subscriber.awaitTerminal(TIMEOUT)).isTrue();
            assertThat(subscriber.error).as("§3.9").isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("§3.9 violated: positive request amount required but it was " + n);
            assertThat(subscriber.values).isEmpty();
            assertThat(subscriber.violations).isEmpty();
            assertThat(mailbox.size()).as("the message stays for the next subscriber").isEqualTo(1);
            AdapterFaultInjectionTest.awaitRoleReleased(mailbox);
        }
    }

    @Test
    void shouldRefuseASecondLiveSubscriberOfAnyFace() {
        final Mailbox<Long> mailbox = Mailboxes.<Long>builder().capacity(8).name("inbox").build();
        mailbox.trySend(1L);
        final StressSubscriber<Long> live = new StressSubscriber<>(0);
        new MailboxPublisher<>(mailbox).subscribe(live);
        final List<Publisher<Long>> others = List.of(new MailboxPublisher<>(mailbox), MailboxFlux.from(mailbox),
                MailboxFlux.from(mailbox).publishOn(Schedulers.immediate()));
        for (Publisher<Long> other : others) {
            final StressSubscriber<Long> second = new StressSubscriber<>(Long.MAX_VALUE);
            other.subscribe(second);
            assertThat(second.isSubscribed()).as("onSubscribe first").isTrue();
            assertThat(second.error).isInstanceOf(IllegalStateException.class)
                    .hasMessage("the mailbox already has a live subscriber (one consumer at a time): name=inbox");
            assertThat(second.values).isEmpty();
        }
        live.request(1);
        assertThat(live.values).as("the live one is unaffected").containsExactly(1L);
        assertThat(live.violations).isEmpty();
    }

    @Test
    void shouldIgnoreRequestAndCancelAfterCancel() {
        final Mailbox<Long> mailbox = Mailboxes.bounded(8);
        mailbox.trySend(1L);
        final StressSubscriber<Long> subscriber = new StressSubscriber<>(0);
        new MailboxPublisher<>(mailbox).subscribe(subscriber);
        subscriber.cancel();
        subscriber.cancel();          // §3.7
        subscriber.request(5);        // §3.6
        subscriber.request(-1);       // §3.6: no onError after cancel
        assertThat(subscriber.values).isEmpty();
        assertThat(subscriber.isTerminated()).isFalse();
        assertThat(mailbox.size()).isEqualTo(1);
        assertThat(MailboxRing.of(mailbox).consumerRole()).as("the role was handed back").isNull();
    }

    @Test
    void shouldEndWithTheRejectionWhenTheExecutorRejects() {
        final Mailbox<Long> mailbox = Mailboxes.bounded(8);
        mailbox.trySend(1L);
        final RejectedExecutionException rejected = new RejectedExecutionException("pool shut down");
        final StressSubscriber<Long> subscriber = new StressSubscriber<>(1);
        new MailboxPublisher<>(mailbox, 4, task -> {
            throw rejected;
        }).subscribe(subscriber);
        assertThat(subscriber.awaitTerminal(TIMEOUT)).isTrue();
        assertThat(subscriber.error).isSameAs(rejected);
        assertThat(mailbox.size()).as("nothing taken").isEqualTo(1);
        assertThat(MailboxRing.of(mailbox).consumerRole()).isNull();
    }

    @Test
    void shouldSignalWhatOnSubscribeThrew() {
        final Mailbox<Long> mailbox = Mailboxes.bounded(8);
        mailbox.trySend(1L);
        final IllegalStateException boom = new IllegalStateException("onSubscribe failed");
        final AtomicReference<Throwable> error = new AtomicReference<>();
        new MailboxPublisher<>(mailbox).subscribe(new Subscriber<Long>() {
            @Override
            public void onSubscribe(Subscription s) {
                s.request(10);
                throw boom; // §2.13 broken
            }

            @Override
            public void onNext(Long v) {
                error.compareAndSet(null, new AssertionError("onNext after a failed onSubscribe: " + v));
            }

            @Override
            public void onError(Throwable t) {
                error.compareAndSet(null, t);
            }

            @Override
            public void onComplete() {
                error.compareAndSet(null, new AssertionError("onComplete"));
            }
        });
        assertThat(error.get()).isSameAs(boom);
        assertThat(mailbox.size()).isEqualTo(1);
        assertThat(MailboxRing.of(mailbox).consumerRole()).isNull();
    }

    @Test
    void shouldCancelTheUpstreamWhenSomeoneElseClosesTheMailbox() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(new MailboxSubscriber<>(mailbox, 4));
        upstream.next(1);
        mailbox.close();
        upstream.assertCancelled();
        assertThat(mailbox.tryRecv()).isEqualTo(1);
        assertThat(mailbox.isTerminated()).isTrue();
    }

    @Test
    void shouldCloseExceptionallyWhenTheUpstreamSendsAnOversizedFrame() {
        final FrameMailbox frames = Mailboxes.frames(8, 16);
        final TestPublisher<MessageFrame> upstream = TestPublisher.create();
        upstream.subscribe(new MailboxSubscriber<>(frames, 4));
        upstream.next(MessageFrame.of(1, 1L, new byte[16]), MessageFrame.of(1, 2L, new byte[17]));
        upstream.assertCancelled();
        assertThat(frames.closeCause()).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("payload: 17 bytes (expected: <= maxPayload 16)");
        assertThat(frames.tryRecv()).isEqualTo(MessageFrame.of(1, 1L, new byte[16]));
        assertThatThrownBy(frames::recv).isInstanceOf(MailboxClosedException.class)
                .hasCauseInstanceOf(IllegalArgumentException.class);
        assertThat(MailboxRing.of(frames).reserved()).isZero();
    }

    @Test
    void shouldCloseTheMailboxAndCancelTheUpstreamWhenTheProcessorsDownstreamCancels() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(mailbox);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(processor);
        upstream.next(1, 2);
        final StressSubscriber<Integer> downstream = new StressSubscriber<>(1);
        processor.subscribe(downstream);
        downstream.cancel();
        upstream.assertCancelled();
        assertThat(mailbox.isClosed()).isTrue();
        final List<Integer> rest = new ArrayList<>();
        mailbox.tryRecvMany(rest::add, 8);
        assertThat(downstream.values).containsExactly(1);
        assertThat(rest).as("what is in the mailbox stays receivable").containsExactly(2);
    }

    // ------------------------------------------------------------------ internal hooks (adapter authors)

    @Test
    void shouldRejectBadHookArguments() {
        final Mailbox<String> mailbox = Mailboxes.bounded(4);
        final MailboxRing<String> ring = MailboxRing.of(mailbox);
        assertThat(ring.reserve(0)).isZero();
        assertThat(ring.reserve(-5)).isZero();
        ring.releaseReserved(0);
        ring.releaseReserved(-3);
        assertThat(ring.reserved()).isZero();
        assertThatThrownBy(() -> ring.awaitData(null)).isInstanceOf(NullPointerException.class).hasMessage("w");
        assertThatThrownBy(() -> ring.roomTicket(null)).isInstanceOf(NullPointerException.class).hasMessage("owner");
        assertThatThrownBy(() -> ring.onClose(null)).isInstanceOf(NullPointerException.class).hasMessage("w");
        assertThatThrownBy(() -> ring.attachConsumer(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("role");
        assertThatThrownBy(() -> MailboxRing.of(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> ring.sendReserved("x")).as("no permit: refused before anything is claimed")
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("sendReserved without a reserved slot: name=mailbox, reserved=0");
        assertThat(mailbox.stats().admitted()).isZero();
        assertThat(ring.reserve(1)).isEqualTo(1);
        mailbox.close();
        assertThat(ring.sendReserved("y")).as("with a permit, closed: false, the permit returned").isFalse();
        assertThat(ring.reserved()).isZero();
    }

    @FunctionalInterface
    interface ThrowingCall {
        void call() throws Exception;
    }
}

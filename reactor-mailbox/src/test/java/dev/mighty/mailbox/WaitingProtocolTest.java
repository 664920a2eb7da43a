package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.AbstractList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.reactor.MailboxMonos;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;

/**
 * The waiting protocol's rules, each pinned by the defect that broke it (docs/reliability.md, Findings). Every test
 * here failed on the code before the fix: a hang (bounded by {@link Hang}), a loss, or a count that was wrong.
 */
@Timeout(300)
class WaitingProtocolTest {

    /**
     * A room wake-up is a token for one freed slot: a woken waiter claims, queues again, or hands it on; a
     * registration that no longer needs room is withdrawn. For every kind of room waiter, each way its registration
     * can become unneeded.
     */
    @Nested
    class EveryWakeupIsUsedOrHandedOn {

        /**
         * A {@code sharing} subscriber's message waits in its buffer; the consumer frees the slot without announcing
         * it yet (a fused poll between two announcements: {@code ring.poll()} here); the source completes, and its
         * {@code onComplete} flushes into that room. Its registration is no longer needed: before the fix it stayed
         * queued, took the next wake-up and did nothing, and a {@code send} parked behind it beside an empty mailbox.
         */
        @Test
        void shouldWakeAParkedSendWhenASharingSubscriberCompletedIntoUnannouncedRoom() throws Exception {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
            final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
            assertThat(mailbox.trySend(0)).isTrue();
            final TestPublisher<Integer> source = TestPublisher.create();
            source.subscribe(MailboxSubscriber.sharing(mailbox, 1));
            source.next(1); // full: buffered, registered for room

            assertThat(ring.poll()).isZero(); // room, not announced
            source.complete(); // flushes 1 into it: the registration is not needed any more

            final Forked<Void> sender = Forked.<Void>start("parked-send", () -> {
                mailbox.send(2);
                return null;
            }).awaitParkedOn(ring);
            assertThat(mailbox.tryRecv()).isEqualTo(1); // one slot freed, one wake-up: it must reach the sender
            sender.join();
            assertThat(mailbox.tryRecv()).isEqualTo(2);
            assertThat(mailbox.isClosed()).as("sharing: the completion leaves it open").isFalse();
        }

        /**
         * The same with the subscriber's own upstream emptying its buffer: its next {@code onNext} flushes the
         * buffered message and itself into room the consumer has not announced.
         */
        @Test
        void shouldWakeAParkedSendWhenASubscribersOwnOnNextFlushedIntoUnannouncedRoom() throws Exception {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
            final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
            assertThat(mailbox.trySend(-2)).isTrue();
            assertThat(mailbox.trySend(-1)).isTrue();
            final TestPublisher<Integer> source = TestPublisher.create();
            source.subscribe(new MailboxSubscriber<>(mailbox, 2));
            source.next(1); // full: buffered, registered

            assertThat(ring.poll()).isEqualTo(-2);
            assertThat(ring.poll()).isEqualTo(-1); // two slots free, not announced
            source.next(2); // flushes 1, then admits 2: the buffer is empty again

            final Forked<Void> sender = Forked.<Void>start("parked-send", () -> {
                mailbox.send(3);
                return null;
            }).awaitParkedOn(ring);
            assertThat(mailbox.tryRecv()).isEqualTo(1);
            sender.join();
            assertThat(mailbox.tryRecv()).isEqualTo(2);
            assertThat(mailbox.tryRecv()).isEqualTo(3);
        }

        /**
         * Four {@code sharing} subscribers behind a fused {@link MailboxFlux} at capacity 2, two of them completing
         * into room the fused face has not announced: every message arrives and the owner's close ends the stream
         * (before the fix the mailbox ended empty and open, two messages stranded in the other buffers).
         */
        @Test
        void shouldDeliverEveryMessageWhenSharingSubscribersCompleteBehindAFusedFlux() throws Exception {
            for (int round = 0; round < 200; round++) {
                final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
                final List<Integer> got = new CopyOnWriteArrayList<>();
                final CompletableFuture<Void> done = MailboxFlux.from(mailbox).publishOn(Schedulers.single(), 2)
                        .doOnNext(got::add).then().toFuture();
                final List<TestPublisher<Integer>> sources = List.of(TestPublisher.create(), TestPublisher.create(),
                        TestPublisher.create(), TestPublisher.create());
                for (TestPublisher<Integer> source : sources) {
                    source.subscribe(MailboxSubscriber.sharing(mailbox, 1));
                }
                for (int i = 0; i < sources.size(); i++) {
                    sources.get(i).next(i);
                }
                sources.get(0).complete();
                sources.get(1).complete();
                Hang.awaitProgress(got::size, 4, "four messages (round " + round + ")",
                        () -> "stats=" + mailbox.stats() + " got=" + got);
                mailbox.close();
                done.get(Hang.SECONDS, java.util.concurrent.TimeUnit.SECONDS);
                assertThat(got).containsExactlyInAnyOrder(0, 1, 2, 3);
            }
        }

        /** A cancelled {@link MailboxMonos#send} withdraws its registration: the send parked behind it gets in. */
        @Test
        void shouldWakeAParkedSendWhenAWaitingMonoSendIsCancelled() throws Exception {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
            final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
            assertThat(mailbox.trySend(0)).isTrue();
            final Disposable mono = MailboxMonos.send(mailbox, 1).subscribe();
            final Forked<Void> sender = Forked.<Void>start("parked-send", () -> {
                mailbox.send(2);
                return null;
            }).awaitParkedOn(ring);
            mono.dispose();
            assertThat(mailbox.tryRecv()).isZero();
            sender.join();
            assertThat(mailbox.tryRecv()).isEqualTo(2);
            assertThat(mailbox.tryRecv()).as("the cancelled send admitted nothing").isNull();
        }
    }

    /** {@code MailboxFlux.sendAll}'s success means every element is in the mailbox. */
    @Nested
    class AReportedSuccessMeansItIsIn {

        @Test
        void shouldCompleteSendAllOnlyOnceTheLastElementIsAdmitted() throws Exception {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
            final CompletableFuture<Void> sent = MailboxFlux.sendAll(Flux.just(1, 2), mailbox).toFuture();
            assertThat(sent).as("2 waits in the buffer: not in yet").isNotDone();
            assertThat(mailbox.isClosed()).isFalse();
            assertThat(mailbox.recv()).isEqualTo(1);
            sent.get(Hang.SECONDS, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(mailbox.isClosed()).as("closed once all is in").isTrue();
            assertThat(mailbox.recv()).isEqualTo(2);
            assertThat(mailbox.recv()).isNull();
        }

        @Test
        void shouldFailSendAllNamingTheDroppedElementsWhenTheMailboxIsClosedFirst() {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
            final List<Object> discarded = new CopyOnWriteArrayList<>();
            final CompletableFuture<Void> sent = MailboxFlux.sendAll(Flux.range(1, 4).concatWith(Flux.never()),
                            mailbox, 2)
                    .doOnDiscard(Object.class, discarded::add)
                    .toFuture();
            assertThat(sent).isNotDone();
            mailbox.close(); // by its owner, while 3 and 4 wait in the buffer
            assertThat(sent).isCompletedExceptionally();
            assertThatThrownBy(sent::join).hasCauseInstanceOf(MailboxClosedException.class)
                    .hasMessageContaining("dropped=2");
            assertThat(discarded).as("the dropped elements go to the discard hook").containsExactly(3, 4);
            assertThat(mailbox.stats().rejectedClosed()).isEqualTo(2L);
        }

        @Test
        void shouldNotCloseTheMailboxWhenSendAllIsCancelledAfterItCompleted() {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
            final AtomicReference<Subscription> subscription = new AtomicReference<>();
            final AtomicBoolean completed = new AtomicBoolean();
            MailboxFlux.sendAll(Flux.just(1), mailbox).subscribe(new Subscriber<Void>() {
                @Override
                public void onSubscribe(Subscription s) {
                    subscription.set(s);
                }

                @Override
                public void onNext(Void unused) {
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onComplete() {
                    completed.set(true);
                }
            });
            assertThat(completed).isTrue();
            subscription.get().cancel(); // after completion: nothing happens
            assertThat(mailbox.stats().rejectedClosed()).isZero();
            assertThat(mailbox.tryRecv()).isEqualTo(1);
        }
    }

    /** A send that throws between its claim and its publish leaves a placeholder, never a hole. */
    @Nested
    class NoHoleSurvivesAThrow {

        /** A batch whose limit shrank after {@code add}: refused before anything is claimed. */
        @Test
        void shouldRefuseAFrameBatchWhosePayloadLimitShrankBeforeClaimingAnything() {
            final FrameMailbox frames = Mailboxes.frames(8);
            final ByteBuffer shrinking = ByteBuffer.allocate(64);
            final FrameBatch batch = new FrameBatch(2)
                    .add(1, 1L, ByteBuffer.wrap(new byte[] {1, 2, 3}))
                    .add(2, 2L, shrinking);
            shrinking.limit(10);
            assertThatThrownBy(() -> frames.trySendMany(batch, 0, 2))
                    .isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessage("batch frame: index=1, payload bytes 0 .. 64 (as added) beyond the buffer's limit 10 "
                            + "(expected: the limit still covers them when the batch is sent): nothing was admitted");
            assertThat(frames.stats().admitted()).as("nothing claimed").isZero();
        }

        /**
         * A zero-garbage send whose payload is a mapping of a file truncated under it: the copy faults. The frame
         * is not admitted, and the mailbox keeps working: the next frame, the close and the end of stream arrive.
         */
        @Test
        void shouldKeepDeliveringWhenAFramesPayloadCopyFaults(@TempDir Path dir) throws Exception {
            final ChildJvm.Result result = ChildJvm.run(Hang.SECONDS, List.of("-cp", ChildJvm.testClassPath(),
                    SendFaultProbe.class.getName(), "mapped", dir.resolve("payload").toString()));
            assertThat(result.output()).contains("fault: java.lang.InternalError").contains("delivered: 7");
            assertThat(result.exitCode()).as(result.output()).isZero();
        }

        /** A send whose spill buffer cannot be allocated: the same. */
        @Test
        void shouldKeepDeliveringWhenAFramesSpillAllocationFails() throws Exception {
            final ChildJvm.Result result = ChildJvm.run(Hang.SECONDS, List.of("-Xmx24m", "-cp",
                    ChildJvm.testClassPath(), SendFaultProbe.class.getName(), "oom"));
            assertThat(result.output()).contains("fault: java.lang.OutOfMemoryError").contains("delivered: 7");
            assertThat(result.exitCode()).as(result.output()).isZero();
        }

        /** A list whose {@code get} throws mid-run: the rest of the run is placeholders; later sends arrive. */
        @Test
        void shouldKeepDeliveringWhenABatchElementThrows() throws Exception {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(4);
            final List<Integer> broken = new AbstractList<>() {
                @Override
                public Integer get(int index) {
                    if (index == 1 && broke.getAndIncrement() > 0) {
                        throw new IllegalStateException("boom");
                    }
                    return index;
                }

                @Override
                public int size() {
                    return 3;
                }
            };
            assertThatThrownBy(() -> mailbox.trySendMany(broken, 0, 3)).hasMessage("boom");
            assertThat(mailbox.trySend(7)).isTrue();
            assertThat(mailbox.tryRecv()).isZero();
            assertThat(mailbox.tryRecv()).isEqualTo(7);
            mailbox.close();
            assertThat(mailbox.recv(Hang.TIMEOUT)).isNull();
            assertThat(mailbox.isTerminated()).isTrue();
        }

        private final AtomicInteger broke = new AtomicInteger();
    }

    /** A message a subscriber held when someone else closed the mailbox is dropped once, counted once. */
    @Nested
    class DroppedMessagesAreCountedOnce {

        @Test
        void shouldCountAndReleaseABufferedMessageWhenSomeoneElseClosesAndTheUpstreamNeverEnds() throws Exception {
            final Mailbox<Object> mailbox = Mailboxes.bounded(1);
            assertThat(mailbox.trySend("first")).isTrue();
            final TestPublisher<Object> source = TestPublisher.create();
            source.subscribe(new MailboxSubscriber<>(mailbox, 1));
            Object buffered = new Object();
            final WeakReference<Object> ref = new WeakReference<>(buffered);
            source.next(buffered);
            buffered = null;
            mailbox.close();
            source.assertCancelled();
            assertThat(mailbox.stats().rejectedClosed()).isEqualTo(1L);
            for (int i = 0; i < 50 && ref.get() != null; i++) {
                System.gc();
                Thread.sleep(10);
            }
            assertThat(ref.get()).as("the subscriber keeps no reference to a dropped message").isNull();
            assertThat(mailbox.tryRecv()).isEqualTo("first");
        }

        @Test
        void shouldNeverCallTheSubscriptionFromInsideOnCompleteWhenACloseRacesIt() throws Exception {
            for (int round = 0; round < 2_000; round++) {
                final Mailbox<Integer> mailbox = Mailboxes.bounded(1);
                assertThat(mailbox.trySend(0)).isTrue();
                final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox, 1);
                final AtomicReference<Thread> inOnComplete = new AtomicReference<>();
                final AtomicBoolean violated = new AtomicBoolean();
                subscriber.onSubscribe(new Subscription() {
                    @Override
                    public void request(long n) {
                        check();
                    }

                    @Override
                    public void cancel() {
                        check(); // §2.3; a cancel from the closer's thread meanwhile is fine (§3.7 makes it a no-op)
                    }

                    private void check() {
                        if (inOnComplete.get() == Thread.currentThread()) {
                            violated.set(true);
                        }
                    }
                });
                subscriber.onNext(1); // buffered
                Hang.race(mailbox::close, () -> {
                    inOnComplete.set(Thread.currentThread());
                    subscriber.onComplete();
                    inOnComplete.set(null);
                });
                assertThat(violated).as("round %d: a call on the subscription inside onComplete (§2.3)", round)
                        .isFalse();
                assertThat(mailbox.stats().rejectedClosed() + mailbox.stats().admitted())
                        .as("1 admitted or counted, never both or neither").isEqualTo(2L);
            }
        }
    }

    /** The fused poll lock knows its holder: code it runs that comes back on the same thread does not spin on it. */
    @Nested
    class ThePollLockKnowsItsHolder {

        /**
         * A fused {@code publishOn} worker polls the placeholder a failed run left; the poll's skip announces the
         * room, which wakes a registration whose callback cancels the pipeline on that worker, inside the poll.
         * Before the fix the cancel's role release spun on the poll lock its own thread held, for ever, and the next
         * subscriber never got the mailbox.
         */
        @Test
        void shouldHandTheMailboxOnWhenAPlaceholderSkippedInsideAFusedPollWakesACancelOnTheSameThread()
                throws InterruptedException {
            final Mailbox<Integer> mailbox = mailboxWithAPlaceholderBehind(10);
            final MailboxRing<Integer> ring = MailboxRing.of(mailbox);
            // [10, placeholder]: full. A room registration whose callback cancels the consumer.
            final List<Integer> got = new CopyOnWriteArrayList<>();
            final BaseSubscriber<Integer> consumer = collecting(got);
            // Waits for the callback to return, not for isDisposed(): BaseSubscriber reports itself disposed before it
            // cancels upstream, and a subscriber that came in between would be refused (the holder still live).
            final AtomicBoolean cancelled = new AtomicBoolean();
            assertThat(ring.roomTicket(() -> {
                consumer.dispose();
                cancelled.set(true);
            }).await()).isTrue();
            MailboxFlux.from(mailbox).publishOn(Schedulers.single()).subscribe(consumer);
            Hang.awaitProgress(() -> cancelled.get() ? 1 : 0, 1, "the cancel from inside the poll",
                    () -> "got=" + got + " stats=" + mailbox.stats());
            StepVerifier.create(MailboxFlux.from(mailbox)) // accepted behind the cancelled one, handed the mailbox
                    .then(() -> mailbox.trySend(99))
                    .expectNext(99)
                    .thenCancel()
                    .verify(Hang.TIMEOUT);
            assertThat(got).containsExactly(10);
            assertThat(consumer.isDisposed()).isTrue();
        }

        /**
         * The same cancel from inside a fused poll's skip, and then a send into the room the skip made, before the
         * poll has moved on: the poll went on to the next slot and returned that message to the cancelled pipeline,
         * which discarded it. (On a CI run the send came from the test thread, which the cancel had let go on: the
         * next subscriber waited for a message the old one had taken.) A poll stops at a skip that cancelled it.
         */
        @Test
        void shouldLeaveInTheMailboxAMessageSentAfterACancelMadeInsideAFusedPoll() throws InterruptedException {
            final Mailbox<Integer> mailbox = mailboxWithAPlaceholderBehind(10);
            final List<Integer> got = new CopyOnWriteArrayList<>();
            final List<Object> discarded = new CopyOnWriteArrayList<>();
            final BaseSubscriber<Integer> consumer = collecting(got);
            final AtomicBoolean sent = new AtomicBoolean();
            assertThat(MailboxRing.of(mailbox).roomTicket(() -> {
                consumer.dispose();
                sent.set(mailbox.trySend(99)); // the room the skip made
            }).await()).isTrue();
            MailboxFlux.from(mailbox).publishOn(Schedulers.single())
                    .doOnDiscard(Object.class, discarded::add)
                    .subscribe(consumer);
            Hang.awaitProgress(() -> sent.get() ? 1 : 0, 1, "the cancel and the send from inside the poll",
                    () -> "got=" + got + " stats=" + mailbox.stats());
            StepVerifier.create(MailboxFlux.from(mailbox))
                    .expectNext(99)
                    .thenCancel()
                    .verify(Hang.TIMEOUT);
            assertThat(got).containsExactly(10);
            assertThat(discarded).isEmpty();
        }

        /** As above, on the batch drain (an unfused {@code MailboxFlux}): no {@code onNext} after its own cancel. */
        @Test
        void shouldLeaveInTheMailboxAMessageSentAfterACancelMadeInsideABatchDrain() {
            final Mailbox<Integer> mailbox = mailboxWithAPlaceholderBehind(10);
            final List<Integer> got = new CopyOnWriteArrayList<>();
            final BaseSubscriber<Integer> consumer = collecting(got);
            final AtomicBoolean sent = new AtomicBoolean();
            assertThat(MailboxRing.of(mailbox).roomTicket(() -> {
                consumer.dispose();
                sent.set(mailbox.trySend(99));
            }).await()).isTrue();
            MailboxFlux.from(mailbox).subscribe(consumer); // the drain runs here, on the subscribing thread
            assertThat(sent).isTrue();
            assertThat(got).containsExactly(10);
            assertThat(mailbox.tryRecv()).isEqualTo(99);
        }

        /** As above, on {@code MailboxPublisher}'s drain, cancelled through its {@code Subscription}. */
        @Test
        void shouldLeaveInTheMailboxAMessageSentAfterACancelMadeInsideAPublisherDrain() {
            final Mailbox<Integer> mailbox = mailboxWithAPlaceholderBehind(10);
            final List<Integer> got = new CopyOnWriteArrayList<>();
            final AtomicReference<Subscription> subscription = new AtomicReference<>();
            final AtomicBoolean sent = new AtomicBoolean();
            assertThat(MailboxRing.of(mailbox).roomTicket(() -> {
                subscription.get().cancel();
                sent.set(mailbox.trySend(99));
            }).await()).isTrue();
            new MailboxPublisher<>(mailbox, 16).subscribe(new Subscriber<Integer>() {
                @Override
                public void onSubscribe(Subscription s) {
                    subscription.set(s);
                    s.request(Long.MAX_VALUE); // the drain runs here
                }

                @Override
                public void onNext(Integer value) {
                    got.add(value);
                }

                @Override
                public void onError(Throwable t) {
                    got.add(-1);
                }

                @Override
                public void onComplete() {
                    got.add(-2);
                }
            });
            assertThat(sent).isTrue();
            assertThat(got).containsExactly(10);
            assertThat(mailbox.tryRecv()).isEqualTo(99);
        }

        /** A full mailbox of two: {@code first}, then the placeholder a send that threw at its publish left. */
        private Mailbox<Integer> mailboxWithAPlaceholderBehind(int first) {
            final Mailbox<Integer> mailbox = Mailboxes.bounded(2);
            final AtomicInteger gets = new AtomicInteger();
            final List<Integer> run = new AbstractList<>() {
                @Override
                public Integer get(int index) {
                    if (index == 1 && gets.getAndIncrement() > 0) {
                        throw new IllegalStateException("changed"); // checked fine, throws at its publish
                    }
                    return first + index;
                }

                @Override
                public int size() {
                    return 2;
                }
            };
            assertThatThrownBy(() -> mailbox.trySendMany(run, 0, 2)).hasMessage("changed");
            assertThat(mailbox.size()).isEqualTo(2);
            return mailbox;
        }

        private BaseSubscriber<Integer> collecting(List<Integer> got) {
            return new BaseSubscriber<>() {
                @Override
                protected void hookOnNext(Integer value) {
                    got.add(value);
                }
            };
        }
    }

    /** For {@link NoHoleSurvivesAThrow}: runs a faulting send in a JVM of its own. */
    public static final class SendFaultProbe {
        public static void main(String[] args) throws Exception {
            final FrameMailbox frames = Mailboxes.frames(4, 32 << 20);
            try {
                if (args[0].equals("mapped")) {
                    final Path file = Path.of(args[1]);
                    Files.write(file, new byte[8192]);
                    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ,
                            StandardOpenOption.WRITE)) {
                        final ByteBuffer mapped = channel.map(FileChannel.MapMode.READ_WRITE, 0, 8192);
                        channel.truncate(0); // the pages go away under the mapping
                        frames.trySend(1, 1L, mapped);
                    }
                } else {
                    // a direct payload: nothing on the heap; its spill buffer (32 MiB) does not fit in -Xmx24m
                    frames.trySend(1, 1L, ByteBuffer.allocateDirect(20 << 20));
                }
                System.out.println("no fault");
                System.exit(2);
            } catch (InternalError | OutOfMemoryError fault) {
                System.out.println("fault: " + fault.getClass().getName());
            }
            frames.trySend(7, 7L, ByteBuffer.wrap(new byte[] {7}));
            frames.close();
            final MessageFrame frame = frames.recv(Duration.ofSeconds(30));
            System.out.println("delivered: " + (frame == null ? "nothing" : frame.kind()));
            final MessageFrame end = frames.recv(Duration.ofSeconds(30));
            System.out.println("end: " + (end == null && frames.isTerminated()));
            System.exit(frame != null && frame.kind() == 7 && end == null && frames.isTerminated() ? 0 : 1);
        }
    }

}

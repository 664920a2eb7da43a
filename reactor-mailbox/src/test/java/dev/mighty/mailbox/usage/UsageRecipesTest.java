package dev.mighty.mailbox.usage;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.SubmissionPublisher;
import java.util.concurrent.atomic.AtomicLong;

import dev.mighty.mailbox.DocRecipes;
import dev.mighty.mailbox.FrameBatch;
import dev.mighty.mailbox.FrameHandler;
import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.rs.MailboxPublisher;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.FlowAdapters;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Runs every recipe of {@code docs/usage.md}. The code between {@code // tag::name[]} and {@code // end::name[]}
 * is what the document shows, character for character (minus the indentation);
 * {@link #shouldShowEveryRecipeVerbatimInTheUsageDoc()} fails when the two drift apart.
 */
@Timeout(300)
class UsageRecipesTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    // ------------------------------------------------------------------ 1. an actor-style consumer loop

    @Test
    void shouldRunTheActorLoopUntilTheMailboxIsClosedAndDrained() throws Exception {
        final List<String> handled = new CopyOnWriteArrayList<>();
        // tag::actor-loop[]
        Mailbox<String> inbox = Mailboxes.bounded(1024);

        Thread actor = new Thread(() -> {
            try {
                // parks while empty; takes up to 64 at once; returns 0 once closed and drained
                while (inbox.recvMany(handled::add, 64) > 0) {
                    // one batch handled; a wake-up for parked senders was paid once for all of it
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "actor");
        actor.start();

        inbox.send("hello");   // any thread; parks while the mailbox is full
        inbox.trySend("world"); // or: false when full, never blocks
        inbox.close();          // what was sent is still delivered, then the loop ends
        actor.join();
        // end::actor-loop[]
        assertThat(handled).containsExactly("hello", "world");
        assertThat(actor.isAlive()).isFalse();
    }

    // ------------------------------------------------------------------ 2. a Flux into a mailbox

    @Test
    void shouldSendAFluxIntoAMailbox() {
        // tag::flux-into-mailbox[]
        Mailbox<Integer> mailbox = Mailboxes.bounded(256);

        // Requests at most `prefetch` (default: min(capacity, 256)) ahead of what was admitted; what finds the
        // mailbox full waits in the subscriber's buffer. Completes once all is in and the mailbox closed; fails if
        // someone else closes it first.
        Mono<Void> sent = MailboxFlux.sendAll(Flux.range(1, 1_000), mailbox);

        Mono<Integer> sum = MailboxFlux.from(mailbox).reduce(0, Integer::sum); // completes once closed and drained
        sent.subscribe();
        Integer total = sum.block(); // 500500
        // end::flux-into-mailbox[]
        assertThat(total).isEqualTo(500_500);
        assertThat(mailbox.isTerminated()).isTrue();
    }

    // ------------------------------------------------------------------ 3. a mailbox into a Flux, fused

    @Test
    void shouldReceiveThroughAFusedPublishOnAndLeaveTheRestWhenCancelled() {
        final Scheduler worker = Schedulers.newSingle("worker", true);
        try {
            // tag::mailbox-into-flux[]
            Mailbox<String> orders = Mailboxes.bounded(1024);
            for (int i = 0; i < 100; i++) {
                orders.trySend("order-" + i);
            }

            // publishOn fuses with the mailbox: it polls the mailbox itself instead of prefetching
            // into a queue of its own, so whatever the pipeline did not take stays in the mailbox.
            List<String> firstTen = MailboxFlux.from(orders)
                    .publishOn(worker)
                    .take(10)
                    .collectList()
                    .block();

            int left = orders.size(); // 90: the next subscriber starts at "order-10"
            // end::mailbox-into-flux[]
            assertThat(firstTen).hasSize(10).first().isEqualTo("order-0");
            assertThat(left).isEqualTo(90);
            orders.close();
            assertThat(MailboxFlux.from(orders).blockFirst(TIMEOUT)).isEqualTo("order-10");
        } finally {
            worker.dispose();
        }
    }

    // ------------------------------------------------------------------ 4. the zero-garbage frame consumer

    @Test
    void shouldConsumeFramesWithoutAllocating() throws Exception {
        final AtomicLong checksum = new AtomicLong();
        // tag::frames[]
        FrameMailbox frames = Mailboxes.frames(1024); // 1024 slots of 64 bytes, 48 of them inline payload

        // producer: copies the buffer's remaining bytes into a slot; the buffer is reused
        ByteBuffer payload = ByteBuffer.allocate(16);
        for (long id = 0; id < 10; id++) {
            payload.clear();
            payload.putLong(id).putLong(id * id).flip();
            frames.send(1, id, payload);
        }
        frames.close();

        // consumer: a reused view over each slot, valid only inside the handler; allocate the handler once
        byte[] scratch = new byte[FrameMailbox.INLINE_PAYLOAD];
        FrameHandler handler = frame -> {
            int length = frame.getPayload(scratch, 0); // copy out what you keep
            checksum.addAndGet(frame.correlationId() + length);
        };
        while (frames.recvFrames(handler, 64) > 0) {
            // parks while empty; 0 once closed and drained
        }
        // end::frames[]
        assertThat(checksum.get()).isEqualTo(45 + 10 * 16);
    }

    @Test
    void shouldSendFramesInBatches() throws Exception {
        final FrameMailbox frames = Mailboxes.frames(1024);
        final ByteBuffer[] decoded = new ByteBuffer[100];
        for (int i = 0; i < decoded.length; i++) {
            decoded[i] = ByteBuffer.allocate(8).putLong(0, i);
        }
        // tag::frame-batch[]
        // producer: one reused batch; the frames refer to the buffers until the send returns
        FrameBatch batch = new FrameBatch(32);
        for (int i = 0; i < decoded.length; ) {
            batch.clear();
            while (!batch.isFull() && i < decoded.length) {
                batch.add(1, i, decoded[i++]);
            }
            frames.sendMany(batch, 0, batch.size()); // one claim for as many as fit, parks while full
        }
        // end::frame-batch[]
        frames.close();
        final List<Long> ids = new ArrayList<>();
        while (frames.recvFrames(frame -> ids.add(frame.correlationId()), 64) > 0) {
            // until closed and drained
        }
        assertThat(ids).hasSize(100).isSorted().doesNotHaveDuplicates();
    }

    // ------------------------------------------------------------------ 5. bridging to JDK Flow

    @Test
    void shouldBridgeToAndFromJdkFlow() throws Exception {
        final List<String> got = new CopyOnWriteArrayList<>();
        final CompletableFuture<Void> done = new CompletableFuture<>();
        // tag::flow[]
        Mailbox<String> mailbox = Mailboxes.bounded(64);

        // JDK Flow.Publisher -> mailbox: a SubmissionPublisher feeds the mailbox's subscriber side
        SubmissionPublisher<String> jdkPublisher = new SubmissionPublisher<>();
        jdkPublisher.subscribe(FlowAdapters.toFlowSubscriber(new MailboxSubscriber<>(mailbox)));

        // mailbox -> JDK Flow.Subscriber
        Flow.Publisher<String> flowPublisher = FlowAdapters.toFlowPublisher(new MailboxPublisher<>(mailbox));
        flowPublisher.subscribe(new Flow.Subscriber<String>() {
            @Override
            public void onSubscribe(Flow.Subscription subscription) {
                subscription.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(String item) {
                got.add(item);
            }

            @Override
            public void onError(Throwable throwable) {
                done.completeExceptionally(throwable);
            }

            @Override
            public void onComplete() {
                done.complete(null);
            }
        });

        jdkPublisher.submit("a");
        jdkPublisher.submit("b");
        jdkPublisher.close(); // completes the mailbox's subscriber, which closes the mailbox
        // end::flow[]
        assertThat(done).as("ended with onComplete, not onError").succeedsWithin(TIMEOUT);
        assertThat(got).containsExactly("a", "b");
    }

    // ------------------------------------------------------------------ 6. choosing capacity and batch size

    @Test
    void shouldReadTheStatsThatGuideCapacityAndBatchSize() {
        // tag::sizing[]
        Mailbox<String> events = Mailboxes.<String>builder()
                .capacity(4096)        // the burst producers may get ahead by; rounded up to a power of two
                .name("events")        // shows in stats, JFR events, meters and errors
                .build();

        // batchSize: unfused, the most messages per receive (per onNext burst); fused, the most polls
        // between two wake-up checks for parked producers. Larger amortizes more; smaller hands over sooner.
        Flux<String> flux = MailboxFlux.from(events, 64);

        for (int i = 0; i < 1_000; i++) {
            events.trySend("e" + i); // false (counted as refused) once full
        }
        flux.take(1_000).blockLast();

        MailboxStats stats = events.stats();
        // highWaterMark close to capacity, or refused > 0 or parkedProducers > 0 under load:
        // consumers fall behind bursts, so raise the capacity (memory) or add consumers downstream.
        long refused = stats.refused();
        int highWaterMark = stats.highWaterMark();
        // end::sizing[]
        assertThat(events.capacity()).isEqualTo(4096);
        assertThat(refused).isZero();
        assertThat(highWaterMark).isBetween(1, 64);
        assertThat(stats.received()).isEqualTo(1_000L);
    }

    // ------------------------------------------------------------------ 7. choosing a wait policy

    @Test
    void shouldDeliverThroughEveryFaceWhenEachWaitPolicyIsChosen() throws Exception {
        final List<String> handled = new CopyOnWriteArrayList<>();
        // tag::wait-policy[]
        // recv/recvMany on a thread of yours: back off (spin, then yield) before parking. defaults() unless given.
        Mailbox<String> inbox = Mailboxes.<String>builder()
                .waitPolicy(WaitPolicy.backoff(1_000, 100)) // a dedicated core: spin longer, park less often
                .build();

        // A publisher on an executor of its own: its drain task backs off before it gives the thread back.
        ExecutorService consumer = Executors.newSingleThreadExecutor();
        // (WaitPolicy.park() if the executor's threads serve other work too)
        Flux.from(new MailboxPublisher<>(inbox, 256, consumer, WaitPolicy.defaults()))
                .subscribe(handled::add);

        // A fused flux whose publishOn worker serves it alone may back off longer (opt-in; the default lingers).
        Mailbox<String> events = Mailboxes.bounded(1024);
        Scheduler worker = Schedulers.newSingle("events");
        Flux<String> flux = MailboxFlux.from(events, 256, WaitPolicy.defaults()).publishOn(worker);
        // end::wait-policy[]
        inbox.send("a");
        inbox.send("b");
        final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
        while (handled.size() < 2 && System.nanoTime() - deadline < 0) {
            Thread.sleep(1);
        }
        assertThat(handled).containsExactly("a", "b");
        events.send("x");
        events.close();
        assertThat(flux.collectList().block(TIMEOUT)).containsExactly("x");
        worker.dispose();
        consumer.shutdown();
    }

    // ------------------------------------------------------------------ the document and the code agree

    @Test
    void shouldShowEveryRecipeVerbatimInTheUsageDoc() throws IOException {
        DocRecipes.assertShownVerbatim("src/test/java/dev/mighty/mailbox/usage/UsageRecipesTest.java", "docs/usage.md",
                "actor-loop", "flux-into-mailbox", "mailbox-into-flux", "frames", "frame-batch", "flow", "sizing",
                "wait-policy");
    }
}

package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.SendResult;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingMethod;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.publisher.Sinks.EmitResult;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The BlockHound paragraph of docs/usage.md, checked with the real BlockHound: the calls it says never park run on
 * Reactor's non-blocking threads ({@code Schedulers.parallel()}, and a {@code Schedulers.newParallel} for the
 * producers, whose threads are {@code NonBlocking} too), under real concurrency, and BlockHound reports nothing;
 * the calls it says park ({@code send} on a full mailbox, {@code recv} on an empty one) are reported.
 *
 * <p>BlockHound is installed once for this JVM with the integrations on the class path (reactor-core's
 * {@code ReactorBlockHoundIntegration}, which marks the {@code NonBlocking} scheduler threads and allows the
 * schedulers' own waits, and BlockHound's own) and a callback that records each report, with the reporting
 * thread's stack, instead of throwing {@code BlockingOperationError}: a report then cannot change what the library
 * does next, so a case checks both that every message arrived and that nothing was reported. Errors Reactor drops
 * ({@code Hooks.onErrorDropped}) and the subscribers' {@code onError} are checked too, and every task of a case
 * checks that it runs on a thread BlockHound watches (else the case would prove nothing).
 *
 * <p>Runs in the surefire execution {@code blockhound-test} of its own (tag {@code blockhound}): BlockHound rewrites
 * JDK classes for the whole JVM and needs {@code -XX:+AllowRedefinitionToAddDeleteMethods} (reactor-mailbox/pom.xml).
 * Alone: {@code mvn -pl reactor-mailbox test-compile surefire:test@blockhound-test}.
 */
@Tag("blockhound")
class BlockHoundTest {
    /** Producer threads: a {@code newParallel} scheduler of its own, so producers and consumer truly overlap. */
    private static final int PRODUCER_THREADS = 3;
    /** Messages per producer in the streaming cases. */
    private static final int PER_PRODUCER = 4_000;
    /** Messages a producer sends before it pauses until the consumer has gone idle. */
    private static final int BURST = 250;

    /** Everything BlockHound reported, from any thread. */
    private static final Queue<Report> REPORTS = new ConcurrentLinkedQueue<>();
    /** Errors Reactor dropped ({@code Hooks.onErrorDropped}). */
    private static final Queue<Throwable> DROPPED = new ConcurrentLinkedQueue<>();
    /** Tasks of a case that ran on a thread BlockHound does not watch. */
    private static final Queue<String> UNWATCHED = new ConcurrentLinkedQueue<>();

    private static Scheduler producers;

    /**
     * The mailbox of the running case, or null: a report records its {@code size()} (claimed, published or not) at
     * the moment of the report, which tells a wait for a producer's in-flight publish (size at least 1) from a spin
     * on an empty mailbox.
     */
    private static volatile Mailbox<?> watchedMailbox;

    /** One BlockHound report: the blocking method, the thread, the stack from the blocking method down. */
    record Report(String method, String thread, List<StackTraceElement> stack, int size) {
        static Report of(BlockingMethod method) {
            final StackTraceElement[] all = new Throwable().getStackTrace();
            int from = 0; // skip this callback's and BlockHound's frames
            while (from < all.length && (all[from].getClassName().startsWith("reactor.blockhound.")
                    || all[from].getClassName().startsWith(BlockHoundTest.class.getName()))) {
                from++;
            }
            final Mailbox<?> mailbox = watchedMailbox;
            return new Report(method.getClassName().replace('/', '.') + "." + method.getName(),
                    Thread.currentThread().getName(), List.of(all).subList(from, all.length),
                    mailbox == null ? -1 : mailbox.size());
        }

        boolean has(String className, String methodName) {
            return stack.stream().anyMatch(f -> f.getClassName().equals(className)
                    && f.getMethodName().equals(methodName));
        }

        /** @return the method and the first frames below it, for grouping and for failure messages */
        String where() {
            return method + " <- " + stack.stream().limit(14).map(StackTraceElement::toString)
                    .collect(Collectors.joining("\n        <- "));
        }

        /** @return {@link #where()} and the thread's pool, to group reports */
        String key() {
            return where() + "\n    on " + thread.replaceAll("-\\d+$", "-N");
        }
    }

    @BeforeAll
    static void installBlockHound() {
        BlockHound.builder()
                .loadIntegrations()
                .blockingMethodCallback(method -> REPORTS.add(Report.of(method)))
                .install();
        Hooks.onErrorDropped(DROPPED::add);
        producers = Schedulers.newParallel("blockhound-producer", PRODUCER_THREADS);
        // The canary: BlockHound is on, watches parallel(), and leaves the test thread (which parks in block()) alone.
        Mono.fromRunnable(() -> LockSupport.parkNanos(1_000L)).subscribeOn(Schedulers.parallel())
                .block(Hang.TIMEOUT);
        assertThat(REPORTS).as("BlockHound reports a park on parallel()")
                .anySatisfy(r -> {
                    assertThat(r.method()).endsWith(".park");
                    assertThat(r.thread()).startsWith("parallel-");
                });
        assertThat(REPORTS).as("only the canary's thread")
                .allSatisfy(r -> assertThat(r.thread()).startsWith("parallel-"));
        REPORTS.clear();
    }

    @AfterAll
    static void uninstallHooks() {
        Hooks.resetOnErrorDropped();
        producers.dispose();
    }

    @BeforeEach
    void clear() {
        watchedMailbox = null;
        REPORTS.clear();
        DROPPED.clear();
        UNWATCHED.clear();
    }

    /** Makes {@code mailbox} the one whose size the reports record; returns it. */
    static <T> Mailbox<T> watch(Mailbox<T> mailbox) {
        watchedMailbox = mailbox;
        return mailbox;
    }

    /** Called first by every task a case runs: the case proves something only on a thread BlockHound watches. */
    static void watched(String task) {
        if (!Schedulers.isInNonBlockingThread()) {
            UNWATCHED.add(task + " on " + Thread.currentThread().getName());
        }
    }

    /**
     * Nothing reported, dropped or run off a watched thread since the case began. (Before the short waits on borrowed
     * threads became {@code RingWaiters.busyStep}, three of them were reported here: a fused poll and an unfused drain
     * pass waiting for a producer between its claim and its publish, and a fused poll waiting for its lock, each
     * through {@code Thread.onSpinWait()}/{@code yield()}; under BlockHound's default callback they ended a fused flux
     * with {@code onError(BlockingOperationError)} or threw out of a producer's {@code trySend}.)
     */
    static void assertNothingBlocked() {
        assertThat(UNWATCHED).as("tasks that ran where BlockHound does not look").isEmpty();
        assertThat(DROPPED).as("errors Reactor dropped").isEmpty();
        final Map<String, Integer> reported = new TreeMap<>();
        for (Report r : REPORTS) {
            reported.merge(r.key(), 1, Integer::sum);
        }
        assertThat(reported).as("BlockHound reports (blocking method <- stack: count)").isEmpty();
    }

    /** Runs {@code task} on a parallel() thread and waits for it here (the test thread is not watched). */
    static void onParallel(String what, Runnable task) {
        Mono.fromRunnable(() -> {
            watched(what);
            task.run();
        }).subscribeOn(Schedulers.parallel()).block(Hang.TIMEOUT);
    }

    // ------------------------------------------------------------------ helpers: a checking consumer, producers

    /**
     * Checks, on the delivering thread, that each producer's values arrive once and in order: value
     * {@code seq * producers + id}. Requests everything, or {@code chunk} at a time from {@code onNext}.
     */
    static final class Ledger extends BaseSubscriber<Long> {
        final long[] next;
        final int chunk;
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<String> failure = new AtomicReference<>();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        long received;

        Ledger(int producers, int chunk) {
            this.next = new long[producers];
            this.chunk = chunk;
        }

        @Override
        protected void hookOnSubscribe(Subscription subscription) {
            subscription.request(chunk == 0 ? Long.MAX_VALUE : chunk);
        }

        @Override
        protected void hookOnNext(Long value) {
            watched("onNext");
            final int producer = (int) (value % next.length);
            final long seq = value / next.length;
            if (seq != next[producer]) {
                failure.compareAndSet(null, "producer " + producer + ": expected " + next[producer] + ", got " + seq);
            }
            next[producer] = seq + 1;
            received++;
            if (chunk != 0 && received % chunk == 0) {
                request(chunk);
            }
        }

        @Override
        protected void hookOnComplete() {
            watched("onComplete");
            done.countDown();
        }

        @Override
        protected void hookOnError(Throwable t) {
            watched("onError");
            error.set(t);
            done.countDown();
        }

        /** Waits for the end; asserts it was onComplete with every message, once and in order per producer. */
        void assertCompletedWith(long expected) throws InterruptedException {
            Hang.await(done, "the consumer's onComplete");
            assertThat(error.get()).as("onError").isNull();
            assertThat(failure.get()).as("order").isNull();
            assertThat(received).as("messages received").isEqualTo(expected);
        }
    }

    /** How a producer hands over values {@code from .. to - 1}: returns how many were admitted (0 when full). */
    interface Face {
        int send(long[] values, int from, int to);
    }

    static Face trySend(Mailbox<Long> mailbox) {
        return (values, from, to) -> mailbox.trySend(values[from]) ? 1 : 0;
    }

    static Face offer(Mailbox<Long> mailbox) {
        return (values, from, to) -> {
            final SendResult result = mailbox.offer(values[from]);
            assertThat(result).isNotEqualTo(SendResult.CLOSED);
            return result == SendResult.OK ? 1 : 0;
        };
    }

    static Face trySendMany(Mailbox<Long> mailbox) {
        return (values, from, to) -> {
            final List<Long> run = new ArrayList<>();
            for (int i = from; i < Math.min(to, from + 16); i++) {
                run.add(values[i]);
            }
            return mailbox.trySendMany(run);
        };
    }

    static Face tryEmitNext(Sinks.Many<Long> sink) {
        return (values, from, to) -> {
            final EmitResult result = sink.tryEmitNext(values[from]);
            assertThat(result).isIn(EmitResult.OK, EmitResult.FAIL_OVERFLOW);
            return result == EmitResult.OK ? 1 : 0;
        };
    }

    /** {@code emitNext} with a handler that retries an overflow at once (it never sleeps), up to a hang limit. */
    static Face emitNext(Sinks.Many<Long> sink) {
        return (values, from, to) -> {
            final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
            sink.emitNext(values[from], (signal, result) -> result == EmitResult.FAIL_OVERFLOW
                    && System.nanoTime() < deadline);
            return 1;
        };
    }

    /**
     * Sends {@code count} values through {@code face} from one worker of {@link #producers}, never waiting on a
     * thread: a full mailbox reschedules the task; after every {@link #BURST} values it pauses (rescheduling itself)
     * until {@code consumerIdle} holds, so the consumer runs dry, takes its empty-poll path and registers for the
     * next send, again and again while other producers may still be sending.
     */
    static final class Producer implements Runnable {
        final String name;
        final Scheduler.Worker worker = producers.createWorker();
        final long[] values;
        final Face face;
        final BooleanSupplier consumerIdle;
        final CountDownLatch done;
        final AtomicReference<String> failure = new AtomicReference<>();
        int next;
        int sinceBurst;
        long pauseStart = -1L;
        /** Pauses that ended because the consumer was idle: all of them, unless the producer failed. */
        int idleSeen;

        Producer(int id, int producers, int count, Face face, BooleanSupplier consumerIdle, CountDownLatch done) {
            this.name = "producer " + id;
            this.values = new long[count];
            for (int seq = 0; seq < count; seq++) {
                values[seq] = (long) seq * producers + id;
            }
            this.face = face;
            this.consumerIdle = consumerIdle;
            this.done = done;
        }

        void start() {
            worker.schedule(this);
        }

        @Override
        public void run() {
            watched(name);
            try {
                if (pauseStart >= 0L) {
                    if (!consumerIdle.getAsBoolean()) {
                        if (System.nanoTime() - pauseStart > Hang.TIMEOUT.toNanos()) {
                            throw new AssertionError(name + ": the consumer did not go idle within " + Hang.TIMEOUT);
                        }
                        worker.schedule(this, 100, TimeUnit.MICROSECONDS);
                        return;
                    }
                    pauseStart = -1L;
                    idleSeen++;
                }
                while (next < values.length) {
                    final int sent = face.send(values, next, values.length);
                    if (sent == 0) {
                        worker.schedule(this, 50, TimeUnit.MICROSECONDS); // full: free the thread, come back
                        return;
                    }
                    next += sent;
                    sinceBurst += sent;
                    if (sinceBurst >= BURST && next < values.length) {
                        sinceBurst = 0;
                        pauseStart = System.nanoTime();
                        worker.schedule(this, 200, TimeUnit.MICROSECONDS);
                        return;
                    }
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, name + ": " + t);
            }
            worker.dispose();
            done.countDown();
        }
    }

    /** Starts one producer per face; returns them after all have ended (the test thread waits). */
    static List<Producer> produce(List<Face> faces, BooleanSupplier consumerIdle) throws InterruptedException {
        final CountDownLatch done = new CountDownLatch(faces.size());
        final List<Producer> started = new ArrayList<>();
        for (int id = 0; id < faces.size(); id++) {
            started.add(new Producer(id, faces.size(), PER_PRODUCER, faces.get(id), consumerIdle, done));
        }
        started.forEach(Producer::start);
        Hang.await(done, "the producers");
        for (Producer p : started) {
            assertThat(p.failure.get()).as(p.name).isNull();
        }
        return started;
    }

    /** A {@code Mono<Void>}'s end, recorded where it happens. */
    static final class End extends BaseSubscriber<Void> {
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<Throwable> error = new AtomicReference<>();
        volatile boolean completed;

        @Override
        protected void hookOnComplete() {
            watched("a Mono's onComplete");
            completed = true;
            done.countDown();
        }

        @Override
        protected void hookOnError(Throwable t) {
            watched("a Mono's onError");
            error.set(t);
            done.countDown();
        }

        void assertCompleted(String what) throws InterruptedException {
            Hang.await(done, what);
            assertThat(error.get()).as(what).isNull();
            assertThat(completed).as(what).isTrue();
        }
    }

    // ------------------------------------------------------------------ the claims

    /** docs/usage.md: "These never park: tryEmitNext, tryEmitComplete, tryEmitError, emitNext ..., trySend, offer,
     *  trySendMany, ..., MailboxMonos.send and MailboxMonos.terminated". */
    @Nested
    class ProducerFacesNeverPark {

        @Test
        void shouldReportNothingWhenThreeEmittersTryEmitNextAndEmitNextIntoOneSinkOnNonBlockingThreads()
                throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(64)); // small: overflow and retries are frequent
            final Sinks.Many<Long> sink = MailboxSinks.many(mailbox);
            final Ledger ledger = new Ledger(3, 0);
            sink.asFlux().publishOn(Schedulers.parallel()).subscribe(ledger);
            final End terminated = new End();
            Mono.defer(() -> MailboxMonos.terminated(mailbox)).subscribeOn(Schedulers.parallel()).subscribe(terminated);

            produce(List.of(tryEmitNext(sink), tryEmitNext(sink), emitNext(sink)),
                    () -> mailbox.stats().consumerParked());
            final AtomicReference<EmitResult> complete = new AtomicReference<>();
            onParallel("tryEmitComplete", () -> complete.set(sink.tryEmitComplete()));

            assertThat(complete.get()).isEqualTo(EmitResult.OK);
            ledger.assertCompletedWith(3L * PER_PRODUCER);
            terminated.assertCompleted("MailboxMonos.terminated");
            assertNothingBlocked();
        }

        @Test
        void shouldReportNothingWhenTryEmitErrorEndsAStreamOnANonBlockingThread() throws Exception {
            final Sinks.Many<Long> sink = MailboxSinks.many(watch(Mailboxes.<Long>bounded(16)));
            final Ledger ledger = new Ledger(1, 0);
            sink.asFlux().publishOn(Schedulers.parallel()).subscribe(ledger);
            final IllegalStateException boom = new IllegalStateException("boom");
            final AtomicReference<EmitResult> error = new AtomicReference<>();
            onParallel("tryEmitNext, tryEmitError", () -> {
                for (long i = 0; i < 10; i++) {
                    assertThat(sink.tryEmitNext(i)).isEqualTo(EmitResult.OK);
                }
                error.set(sink.tryEmitError(boom));
            });

            assertThat(error.get()).isEqualTo(EmitResult.OK);
            Hang.await(ledger.done, "the consumer's onError");
            assertThat(ledger.error.get()).isSameAs(boom);
            assertThat(ledger.received).as("delivered before the error").isEqualTo(10L);
            assertThat(ledger.failure.get()).isNull();
            assertNothingBlocked();
        }

        @Test
        void shouldCompleteEveryMonoSendWithoutAReportWhenTheyWaitOnAFullMailboxUntilRoomIsMade() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(4));
            for (long i = 0; i < 4; i++) {
                assertThat(mailbox.trySend(i)).isTrue();
            }
            final int waiting = 8;
            final List<End> sends = new ArrayList<>();
            onParallel("MailboxMonos.send on a full mailbox", () -> {
                for (long i = 4; i < 4 + waiting; i++) {
                    final End end = new End();
                    MailboxMonos.send(mailbox, i).subscribe(end);
                    sends.add(end);
                }
            });
            assertThat(sends).as("none can finish while the mailbox is full")
                    .noneMatch(e -> e.done.getCount() == 0);

            // The consumer, on parallel(): each receive makes room and runs the woken Monos' next offer right there.
            final List<Long> received = new ArrayList<>(); // the consumer worker's; read here after its latch
            final CountDownLatch drained = new CountDownLatch(1);
            final Scheduler.Worker consumer = Schedulers.parallel().createWorker();
            try {
                consumer.schedule(new Runnable() {
                    @Override
                    public void run() {
                        watched("tryRecv");
                        final Long m = mailbox.tryRecv();
                        if (m != null) {
                            received.add(m);
                        }
                        if (received.size() < 4 + waiting) {
                            consumer.schedule(this, 50, TimeUnit.MICROSECONDS);
                        } else {
                            drained.countDown();
                        }
                    }
                });
                Hang.await(drained, "the consumer's receives");
            } finally {
                consumer.dispose();
            }
            for (End end : sends) {
                end.assertCompleted("MailboxMonos.send");
            }
            assertThat(received).containsExactlyInAnyOrderElementsOf(
                    Flux.range(0, 4 + waiting).map(Integer::longValue).collectList().block());
            assertThat(mailbox.stats().producerParks()).as("the Monos registered for room").isGreaterThanOrEqualTo(1L);
            assertNothingBlocked();
        }

        @Test
        void shouldReportNothingWhenTwoConcatMapsSendThroughMailboxMonosIntoASmallMailbox() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(8));
            final Ledger ledger = new Ledger(2, 0);
            MailboxFlux.from(mailbox).publishOn(Schedulers.parallel()).subscribe(ledger);
            final List<End> senders = new ArrayList<>();
            for (int id = 0; id < 2; id++) {
                final int producer = id;
                final End end = new End();
                Flux.range(0, PER_PRODUCER)
                        .map(seq -> (long) seq * 2 + producer)
                        .concatMap(value -> {
                            watched("concatMap");
                            return MailboxMonos.send(mailbox, value);
                        })
                        .then()
                        .subscribeOn(producers)
                        .subscribe(end);
                senders.add(end);
            }
            for (End end : senders) {
                end.assertCompleted("a concatMap of MailboxMonos.send");
            }
            onParallel("close", mailbox::close);
            ledger.assertCompletedWith(2L * PER_PRODUCER);
            assertNothingBlocked();
        }
    }

    /** docs/usage.md: "These never park: ..., tryRecv, tryRecvMany, ..., MailboxFlux and MailboxPublisher without
     *  an executor". */
    @Nested
    class ConsumerFacesNeverPark {

        /** The producers of these cases: trySend, offer and trySendMany at once. */
        private List<Face> sendFaces(Mailbox<Long> mailbox) {
            return List.of(trySend(mailbox), offer(mailbox), trySendMany(mailbox));
        }

        @Test
        void shouldReportNothingWhenAFusedFluxOnParallelGoesIdleAndRegistersBetweenBursts() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(64));
            final Ledger ledger = new Ledger(3, 0);
            MailboxFlux.from(mailbox).publishOn(Schedulers.parallel()).subscribe(ledger);
            final long parksBefore = mailbox.stats().consumerParks();

            final List<Producer> done = produce(sendFaces(mailbox), () -> mailbox.stats().consumerParked());
            onParallel("close", mailbox::close);

            ledger.assertCompletedWith(3L * PER_PRODUCER);
            // A producer that saw the consumer registered wakes it with its next send, so its next pause waits for
            // a new registration: at least as many registrations as one producer's pauses.
            final int pauses = done.stream().mapToInt(p -> p.idleSeen).max().orElse(0);
            assertThat(pauses).as("pauses that found the consumer idle and registered").isGreaterThan(0);
            assertThat(mailbox.stats().consumerParks() - parksBefore).as("registrations for the next send")
                    .isGreaterThanOrEqualTo(pauses);
            assertNothingBlocked();
        }

        @Test
        void shouldReportNothingWhenAnUnfusedFluxFeedsPublishOnOnParallel() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(64));
            final Ledger ledger = new Ledger(3, 0);
            // hide(): publishOn cannot fuse, so it requests batches from its worker and the drain runs there
            // (or on the producer whose send woke it)
            MailboxFlux.from(mailbox).hide().publishOn(Schedulers.parallel()).subscribe(ledger);

            produce(sendFaces(mailbox), () -> mailbox.stats().consumerParked());
            onParallel("close", mailbox::close);

            ledger.assertCompletedWith(3L * PER_PRODUCER);
            assertNothingBlocked();
        }

        @Test
        void shouldReportNothingWhenAMailboxFluxIsRequestedInChunksFromOnNext() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(64));
            final Ledger ledger = new Ledger(3, 32);
            // the drain runs on the subscribing parallel() thread, on producers' threads, and inside onNext's request
            MailboxFlux.from(mailbox).subscribeOn(Schedulers.parallel()).subscribe(ledger);

            produce(sendFaces(mailbox), () -> mailbox.stats().consumerParked());
            onParallel("close", mailbox::close);

            ledger.assertCompletedWith(3L * PER_PRODUCER);
            assertNothingBlocked();
        }

        @Test
        void shouldReportNothingWhenAMailboxPublisherWithoutAnExecutorFeedsPublishOnOnParallel() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(64));
            final Ledger ledger = new Ledger(3, 0);
            Flux.from(new MailboxPublisher<>(mailbox)).publishOn(Schedulers.parallel()).subscribe(ledger);

            produce(sendFaces(mailbox), () -> mailbox.stats().consumerParked());
            onParallel("close", mailbox::close);

            ledger.assertCompletedWith(3L * PER_PRODUCER);
            assertNothingBlocked();
        }

        @Test
        void shouldReportNothingWhenTryRecvAndTryRecvManyPollOnParallel() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(64));
            final Ledger ledger = new Ledger(3, 0);
            ledger.onSubscribe(new Subscription() { // the ledger's checks, fed by hand
                @Override
                public void request(long n) {
                }

                @Override
                public void cancel() {
                }
            });
            final Consumer<Long> sink = ledger::onNext;
            final Scheduler.Worker consumer = Schedulers.parallel().createWorker();
            final AtomicInteger polls = new AtomicInteger();
            final ToIntFunction<Integer> receive = poll -> {
                if ((poll & 1) == 0) {
                    final Long m = mailbox.tryRecv();
                    if (m != null) {
                        sink.accept(m);
                        return 1;
                    }
                    return 0;
                }
                return mailbox.tryRecvMany(sink, 32);
            };
            try {
                consumer.schedule(new Runnable() {
                    @Override
                    public void run() {
                        watched("tryRecv, tryRecvMany");
                        if (mailbox.isTerminated()) {
                            ledger.onComplete();
                            return;
                        }
                        if (receive.applyAsInt(polls.getAndIncrement()) == 0) {
                            consumer.schedule(this, 50, TimeUnit.MICROSECONDS); // empty: free the thread
                        } else {
                            consumer.schedule(this);
                        }
                    }
                });
                produce(sendFaces(mailbox), () -> mailbox.size() == 0);
                onParallel("close", mailbox::close);
                ledger.assertCompletedWith(3L * PER_PRODUCER);
            } finally {
                consumer.dispose();
            }
            assertNothingBlocked();
        }
    }

    /** The negative control: docs/usage.md says send and recv park, and BlockHound must say so too. */
    @Nested
    class BlockingCallsAreReported {

        @Test
        void shouldBeReportedWhenMailboxSendParksOnAFullMailboxOnAParallelThread() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(2));
            assertThat(mailbox.trySend(0L)).isTrue();
            assertThat(mailbox.trySend(1L)).isTrue();
            final End sent = new End();
            Mono.<Void>fromRunnable(() -> {
                watched("send");
                try {
                    mailbox.send(2L); // parks until the test thread makes room
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }).subscribeOn(Schedulers.parallel()).subscribe(sent);

            awaitReport(r -> r.method().endsWith(".park") && r.has("java.util.concurrent.locks.LockSupport", "park")
                    && r.has("dev.mighty.mailbox.internal.RingWaiters", "parkForRoom"), "the park of a full send");
            assertThat(mailbox.tryRecv()).isEqualTo(0L); // room: the send gets in
            sent.assertCompleted("the parked send");
            assertThat(mailbox.tryRecv()).isEqualTo(1L);
            assertThat(mailbox.tryRecv()).isEqualTo(2L);
            assertThat(REPORTS).as("all on the sending parallel() thread")
                    .allSatisfy(r -> assertThat(r.thread()).startsWith("parallel-"));
        }

        @Test
        void shouldBeReportedWhenMailboxRecvParksOnAnEmptyMailboxOnAParallelThread() throws Exception {
            final Mailbox<Long> mailbox = watch(Mailboxes.bounded(2));
            final AtomicReference<Long> got = new AtomicReference<>();
            final End received = new End();
            Mono.<Void>fromRunnable(() -> {
                watched("recv");
                try {
                    got.set(mailbox.recv()); // parks until the test thread sends
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }).subscribeOn(Schedulers.parallel()).subscribe(received);

            awaitReport(r -> r.method().endsWith(".park") && r.has("java.util.concurrent.locks.LockSupport", "park")
                    && r.has("dev.mighty.mailbox.internal.RingWaiters", "awaitData"), "the park of an empty recv");
            assertThat(mailbox.trySend(7L)).isTrue();
            received.assertCompleted("the parked recv");
            assertThat(got.get()).isEqualTo(7L);
        }

        private void awaitReport(java.util.function.Predicate<Report> which, String what) throws InterruptedException {
            Hang.awaitProgress(() -> REPORTS.stream().anyMatch(which) ? 1L : 0L, 1L, what,
                    () -> "reports: " + REPORTS.stream().map(Report::where).collect(Collectors.joining("\n")));
        }
    }
}

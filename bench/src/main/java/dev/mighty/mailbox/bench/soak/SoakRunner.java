package dev.mighty.mailbox.bench.soak;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.bench.Faces;
import dev.mighty.mailbox.internal.MailboxRing;
import org.HdrHistogram.Histogram;
import org.reactivestreams.Publisher;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * {@code soak}: many producers send into one bounded mailbox for a long time while the consumer side keeps
 * changing hands: legs of {@code MailboxPublisher} (trampolined and on an executor), {@code MailboxFlux}
 * (unfused, and fused through {@code publishOn}) and raw {@code recvMany}, each with random demand and ended by a
 * cancel (from the controller thread, racing the deliveries, or from inside {@code onNext}), then the next
 * subscriber picks up where it stopped. Every delivery is booked per producer ({@link SoakLedger}); at the end
 * the producers stop, the mailbox is closed, a last subscriber drains it to {@code onComplete}, and the run
 * reports messages, lost, duplicated, out of order and the latency (HdrHistogram). Exit code 0 only if nothing
 * was lost, duplicated, reordered or delivered beyond demand, and no two consumers overlapped.
 *
 * <p>Two kinds of producer share the mailbox: raw senders (threads mixing {@code send}, {@code send(timeout)}
 * and {@code trySend}) and upstreams that feed it through a {@code MailboxSubscriber} each, with a random
 * prefetch ({@link UpstreamProducer}: long-lived, in segments with idle pauses, so demand is outstanding while
 * nothing is sent). Both book the same way, one sequence per producer. {@code --small} runs them on a mailbox of
 * {@value #SMALL_CAPACITY}, where the prefetches add up past the capacity.
 *
 * <p>A stall watch fails the run ("STALLED", exit code 1) when no message is delivered for
 * {@code --stall-seconds}, printing {@code stats()}, {@code closeCause()} and the threads' top frames.
 *
 * <p>The latency is send-to-delivery and includes the pauses between legs (a cancelled subscription's messages
 * wait for the next one), so its maximum is dominated by the hand-overs, not by the mailbox.
 *
 * <p>Usage: {@code java -cp bench/target/mailbox-bench.jar dev.mighty.mailbox.bench.soak.SoakRunner --duration 10m},
 * and the small-capacity form {@code ... SoakRunner --duration 10m --small}.
 */
@Command(name = "soak", mixinStandardHelpOptions = true, sortOptions = false,
        version = "soak (reactor-mailbox reliability)",
        description = {"Runs producers into one mailbox while the consumer side changes hands (MailboxPublisher,",
                "MailboxFlux, recvMany) with random demand and cancel/resubscribe; raw senders and upstreams into",
                "MailboxSubscribers feed it; checks every message arrives exactly once and in order per producer.",
                "Exit code 1 if anything was lost, duplicated or reordered, or nothing was delivered for",
                "--stall-seconds."})
public final class SoakRunner implements Callable<Integer> {
    /** The consumer faces a leg can use. */
    enum Leg { PUBLISHER, PUBLISHER_EXECUTOR, FLUX, FLUX_PUBLISH_ON, RECV_MANY }

    static final int SMALL_CAPACITY = 8;
    static final int SMALL_SUBSCRIBERS = 6;

    @Option(names = "--duration", paramLabel = "TIME", converter = DurationConverter.class,
            description = "How long producers send, e.g. 30s, 10m, 1h30m, PT2H (default: ${DEFAULT-VALUE}).")
    Duration duration = Duration.ofSeconds(30);

    @Option(names = "--producers", paramLabel = "N", description = "Raw producer threads: send, send(timeout), "
            + "trySend (default: ${DEFAULT-VALUE}).")
    int producers = 3;

    @Option(names = "--subscribers", paramLabel = "N", description = "Upstreams feeding the mailbox through a "
            + "MailboxSubscriber each, random prefetch 1 .. capacity (default: 3; --small: 6).")
    Integer subscribers;

    @Option(names = "--capacity", paramLabel = "N", description = "Mailbox capacity (default: 1024; --small: 8).")
    Integer capacity;

    @Option(names = "--small", description = "Small-capacity preset: --capacity " + SMALL_CAPACITY
            + " --subscribers " + SMALL_SUBSCRIBERS + " unless given (prefetches then add up past the capacity).")
    boolean small;

    @Option(names = "--stall-seconds", paramLabel = "N", description = "Fail as stalled (exit code 1) when no "
            + "message is delivered for N seconds; prints stats(), closeCause() and the threads "
            + "(default: ${DEFAULT-VALUE}).")
    int stallSeconds = 20;

    @Option(names = "--batch", paramLabel = "N", description = "Publisher batch size (default: ${DEFAULT-VALUE}).")
    int batch = 256;

    @Option(names = "--max-request", paramLabel = "N", description = "Largest single request(n) "
            + "(default: ${DEFAULT-VALUE}).")
    int maxRequest = 512;

    @Option(names = "--leg", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Longest time a consumer leg lasts before it is cancelled (default: ${DEFAULT-VALUE}).")
    Duration legLength = Duration.ofMillis(40);

    @Option(names = "--progress", paramLabel = "TIME", converter = DurationConverter.class,
            description = "Interval between progress lines (default: ${DEFAULT-VALUE}).")
    Duration progress = Duration.ofSeconds(5);

    @Option(names = "--seed", paramLabel = "N", description = "Random seed (default: time-based).")
    Long seed;

    @Option(names = "--drop-every", hidden = true, paramLabel = "N",
            description = "Self-test: book every N-th delivery as lost, to prove the checks catch a loss.")
    long dropEvery;

    @Spec
    CommandSpec spec;

    private PrintStream out = System.out;
    private PrintStream err = System.err;

    /** Runs the soak with {@code args}; prints to stdout (result) and stderr (progress). */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** The CLI hook: runs the soak in this JVM and returns its exit code. */
    public static int run(String[] args) {
        return run(System.out, System.err, args);
    }

    /** As {@link #run(String[])}, printing the result to {@code stdout} and progress to {@code stderr}. */
    public static int run(PrintStream stdout, PrintStream stderr, String... args) {
        final SoakRunner command = new SoakRunner();
        command.out = stdout;
        command.err = stderr;
        return new CommandLine(command).setOut(new PrintWriter(stdout, true)).setErr(new PrintWriter(stderr, true))
                .execute(args);
    }

    @Override
    public Integer call() throws Exception {
        final int capacity = this.capacity != null ? this.capacity : small ? SMALL_CAPACITY : 1024;
        final int subscribers = this.subscribers != null ? this.subscribers : small ? SMALL_SUBSCRIBERS : 3;
        if (producers < 0 || subscribers < 0 || producers + subscribers < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--producers and --subscribers must be >= 0, and one of them >= 1");
        }
        if (capacity < 1 || batch < 1 || maxRequest < 1 || stallSeconds < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--capacity, --batch, --max-request and --stall-seconds must be >= 1");
        }
        final long seed = this.seed != null ? this.seed : System.nanoTime();
        final SplittableRandom random = new SplittableRandom(seed);
        final Mailbox<SoakLedger.Message> mailbox = Mailboxes.<SoakLedger.Message>builder().capacity(capacity)
                .name("soak").build();
        final MailboxRing<SoakLedger.Message> ring = MailboxRing.of(mailbox);
        final SoakLedger ledger = new SoakLedger(producers + subscribers, dropEvery);
        final long[] sent = new long[producers + subscribers];
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Map<Leg, Long> legs = new EnumMap<>(Leg.class);
        final ExecutorService executor = Executors.newSingleThreadExecutor(daemon("soak-drain"));
        final Scheduler publishOn = Schedulers.newSingle("soak-publishOn", true);

        out.printf(Locale.ROOT, "soak  jvm=%s  cpus=%d  duration=%s  producers=%d  subscribers=%d  capacity=%d  "
                        + "batch=%d  max-request=%d  leg<=%s  stall=%ds  seed=%d%n", Runtime.version(),
                Runtime.getRuntime().availableProcessors(), format(duration), producers, subscribers,
                mailbox.capacity(), batch, maxRequest, format(legLength), stallSeconds, seed);

        final List<Thread> producerThreads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final int producer = p;
            final long producerSeed = random.nextLong();
            final Thread t = new Thread(() -> produce(mailbox, producer, sent, stop, failure, producerSeed),
                    "soak-producer-" + p);
            t.setDaemon(true);
            producerThreads.add(t);
        }
        final List<UpstreamProducer> upstreams = new ArrayList<>();
        for (int i = 0; i < subscribers; i++) {
            upstreams.add(new UpstreamProducer(producers + i, 1 + random.nextInt(mailbox.capacity()),
                    random.nextLong()));
        }
        if (!upstreams.isEmpty()) {
            final StringBuilder prefetches = new StringBuilder();
            for (UpstreamProducer u : upstreams) {
                prefetches.append(prefetches.length() == 0 ? "" : ", ").append(u.prefetch());
            }
            out.printf(Locale.ROOT, "soak  subscriber prefetch: %s (sum %d, capacity %d)%n", prefetches,
                    upstreams.stream().mapToInt(UpstreamProducer::prefetch).sum(), mailbox.capacity());
        }
        final Sinks.One<Boolean> stopUpstreams = Sinks.one();
        final CountDownLatch upstreamsEnded = new CountDownLatch(upstreams.size());
        final Sinks.Empty<SoakLedger.Message> release = Sinks.empty();
        final long start = System.nanoTime();
        final long end = start + duration.toNanos();
        producerThreads.forEach(Thread::start);
        for (UpstreamProducer u : upstreams) {
            u.start(mailbox, random.nextBoolean() ? Schedulers.parallel() : Schedulers.boundedElastic(),
                    stopUpstreams.asMono(), upstreamsEnded, release.asMono(), failure);
        }
        final StallWatch watch = StallWatch.start(ledger::received, () -> "mailbox: " + mailbox.stats()
                + "\ncloseCause: " + mailbox.closeCause(), Duration.ofSeconds(stallSeconds));

        long nextProgress = start + progress.toNanos();
        long lastReceived = 0;
        long lastTime = start;
        try {
            while (System.nanoTime() - end < 0 && failure.get() == null) {
                final Leg leg = Leg.values()[random.nextInt(Leg.values().length)];
                legs.merge(leg, 1L, Long::sum);
                runLeg(leg, mailbox, ring, ledger, random, executor, publishOn, Math.min(end, System.nanoTime()
                        + 1 + (long) (random.nextDouble() * legLength.toNanos())));
                final long now = System.nanoTime();
                if (now - nextProgress >= 0) {
                    final long received = ledger.received();
                    err.printf(Locale.ROOT, "soak  %8s  msgs=%,15d  rate=%,12.0f/s  legs=%,9d  dup=%d  ooo=%d  "
                                    + "max latency=%s%n", format(Duration.ofNanos(now - start)), received,
                            (received - lastReceived) * 1e9 / (now - lastTime), total(legs), ledger.duplicated(),
                            ledger.outOfOrder(), millis(ledger.maxLatencyNanos()));
                    lastReceived = received;
                    lastTime = now;
                    nextProgress = now + progress.toNanos();
                }
            }
            // The end: stop the producers, close, and drain everything with one last, unbounded subscriber.
            stop.set(true);
            awaitRoleReleased(ring);
            final SoakSubscriber last = new SoakSubscriber(ledger, maxRequest, 0, random.nextLong());
            Faces.publisher(mailbox, batch).subscribe(last);
            last.request(Long.MAX_VALUE);
            for (Thread t : producerThreads) {
                while (t.isAlive()) {
                    t.join(100);
                }
            }
            // Then the upstreams: each stops at once and waits, idle, for the release (the order mattered while
            // subscribers reserved room: an idle upstream then kept its reservations from a waiting raw send).
            stopUpstreams.tryEmitValue(true);
            upstreamsEnded.await(); // the stall watch ends a wait that never does
            for (UpstreamProducer u : upstreams) {
                sent[u.producer()] = u.sent();
            }
            release.tryEmitEmpty(); // nobody sends any more: the upstreams may complete (sharing: the mailbox stays open)
            mailbox.close();
            if (!last.awaitTerminated(60, TimeUnit.SECONDS)) {
                failure.compareAndSet(null, new IllegalStateException("the final drain did not complete in 60 s: "
                        + mailbox.stats()));
            } else if (last.error() != null) {
                failure.compareAndSet(null, last.error());
            }
        } catch (InterruptedException | RuntimeException e) {
            if (watch.stalled() == null) {
                if (e instanceof InterruptedException) {
                    throw e;
                }
                failure.compareAndSet(null, e); // e.g. a leg's subscriber got onError: report it with the books
            } // else the stall watch interrupted us: reported below
        } finally {
            watch.close();
            stop.set(true);
            stopUpstreams.tryEmitValue(true);
            executor.shutdownNow();
            publishOn.dispose();
        }
        Thread.interrupted(); // clears the stall watch's interrupt, if it came after the last wait
        final long elapsed = System.nanoTime() - start;
        final String stalled = watch.stalled();
        if (stalled != null || failure.get() != null) {
            for (UpstreamProducer u : upstreams) {
                sent[u.producer()] = u.sent(); // racy: after a stall or a failure the books are not exact
            }
        }
        if (stalled != null) {
            out.println("soak  STALLED: " + stalled);
        }
        return report(mailbox, ledger, sent, legs, elapsed, failure.get(), stalled != null);
    }

    private int report(Mailbox<SoakLedger.Message> mailbox, SoakLedger ledger, long[] sent, Map<Leg, Long> legs,
            long elapsed, Throwable failure, boolean stalled) {
        long total = 0;
        for (long s : sent) {
            total += s;
        }
        final long lost = ledger.lost(total);
        final Histogram latency = ledger.latency();
        out.printf(Locale.ROOT, "soak  legs: %s%n", legs);
        out.printf(Locale.ROOT, "soak  mailbox: %s%n", mailbox.stats());
        out.printf(Locale.ROOT, "soak  latency: p50=%s  p99=%s  p99.9=%s  max=%s  (send to onNext, including "
                        + "hand-over pauses)%n", millis(latency.getValueAtPercentile(50)),
                millis(latency.getValueAtPercentile(99)), millis(latency.getValueAtPercentile(99.9)),
                millis(latency.getMaxValue()));
        final boolean ok = !stalled && failure == null && lost == 0 && ledger.duplicated() == 0
                && ledger.outOfOrder() == 0 && ledger.overlaps() == 0 && ledger.beyondDemandCount() == 0
                && ledger.received() == total;
        out.printf(Locale.ROOT, "soak  messages=%d  lost=%d  duplicated=%d  out_of_order=%d  beyond_demand=%d  "
                        + "overlaps=%d  max_latency=%s  duration=%s  rate=%.0f/s  %s%n", ledger.received(), lost,
                ledger.duplicated(), ledger.outOfOrder(), ledger.beyondDemandCount(), ledger.overlaps(),
                millis(latency.getMaxValue()), format(Duration.ofNanos(elapsed)), ledger.received() * 1e9 / elapsed,
                ok ? "OK" : stalled ? "STALLED" : "FAILED");
        if (mailbox.closeCause() != null) {
            out.println("soak  closeCause: " + mailbox.closeCause());
        }
        if (failure != null) {
            err.println("soak  failure: " + failure);
            failure.printStackTrace(err);
        }
        return ok ? 0 : 1;
    }

    /** One producer: 0, 1, 2, ... with a mix of blocking, timed and non-blocking sends, until told to stop. */
    private static void produce(Mailbox<SoakLedger.Message> mailbox, int producer, long[] sent, AtomicBoolean stop,
            AtomicReference<Throwable> failure, long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        long seq = 0;
        try {
            while (!stop.get()) {
                final SoakLedger.Message m = new SoakLedger.Message(producer, seq, System.nanoTime());
                final int how = random.nextInt(8);
                final boolean admitted;
                if (how == 0) {
                    admitted = mailbox.send(m, Duration.ofMillis(1));
                } else if (how == 1) {
                    admitted = mailbox.trySend(m);
                    if (!admitted) {
                        Thread.yield();
                    }
                } else {
                    mailbox.send(m);
                    admitted = true;
                }
                if (admitted) {
                    sent[producer] = ++seq; // read after join
                }
            }
        } catch (MailboxClosedException | InterruptedException e) {
            failure.compareAndSet(null, e); // nobody closes or interrupts before the producers stopped
        } catch (Throwable t) {
            failure.compareAndSet(null, t);
        }
    }

    private void runLeg(Leg leg, Mailbox<SoakLedger.Message> mailbox, MailboxRing<SoakLedger.Message> ring,
            SoakLedger ledger, SplittableRandom random, ExecutorService executor, Scheduler publishOn, long until)
            throws InterruptedException {
        if (leg == Leg.RECV_MANY) {
            awaitRoleReleased(ring); // a raw receive is outside the role hand-over: the last subscription must be gone
            final Consumer<SoakLedger.Message> sink = ledger::accept;
            while (System.nanoTime() - until < 0) {
                if (random.nextInt(4) == 0) {
                    mailbox.tryRecvMany(sink, 1 + random.nextInt(batch));
                } else {
                    mailbox.recvMany(sink, 1 + random.nextInt(batch)); // producers are running: returns soon
                }
            }
            return;
        }
        if (random.nextInt(4) == 0) {
            awaitRoleReleased(ring); // else the new subscriber may be queued behind the cancelled one
        }
        final boolean cancelInside = leg == Leg.FLUX_PUBLISH_ON || random.nextInt(3) == 0;
        final SoakSubscriber subscriber = new SoakSubscriber(ledger, maxRequest,
                cancelInside ? 1 + random.nextInt(4 * maxRequest) : 0, random.nextLong());
        final Publisher<SoakLedger.Message> publisher = switch (leg) {
            case PUBLISHER -> Faces.publisher(mailbox, 1 + random.nextInt(batch));
            case PUBLISHER_EXECUTOR -> Faces.publisher(mailbox, 1 + random.nextInt(batch), executor);
            case FLUX -> Faces.flux(mailbox, 1 + random.nextInt(batch));
            default -> Faces.flux(mailbox, 1 + random.nextInt(batch)).publishOn(publishOn,
                    1 + random.nextInt(batch));
        };
        publisher.subscribe(subscriber);
        while (System.nanoTime() - until < 0 && !subscriber.isCancelled()) {
            if (subscriber.error() != null) {
                throw new IllegalStateException(leg + " subscriber failed", subscriber.error());
            }
            if (subscriber.outstanding() == 0 && random.nextInt(3) == 0) {
                subscriber.request(1 + random.nextInt(maxRequest)); // from the controller, racing deliveries
            }
            pause(random.nextInt(200_000));
        }
        if (!subscriber.isCancelled()) {
            // A cancel from another thread. publishOn may drop the one message it polled when such a cancel races
            // its poll (documented on MailboxFlux), so its legs end from inside onNext instead; make sure one comes.
            if (leg == Leg.FLUX_PUBLISH_ON) {
                subscriber.request(Long.MAX_VALUE);
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!subscriber.isCancelled() && System.nanoTime() - deadline < 0) {
                    pause(100_000L);
                }
                if (!subscriber.isCancelled()) {
                    throw new IllegalStateException("publishOn leg did not reach its cancel in 30 s: "
                            + mailbox.stats());
                }
            } else {
                subscriber.cancel();
            }
        }
    }

    private static void awaitRoleReleased(MailboxRing<?> ring) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (ring.consumerRole() != null) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("a cancelled subscription kept the consumer role for 30 s: "
                        + ring.stats());
            }
            pause(50_000L);
        }
    }

    /** Parks for about {@code nanos}; the stall watch's interrupt ends the wait. */
    private static void pause(long nanos) throws InterruptedException {
        LockSupport.parkNanos(nanos);
        if (Thread.interrupted()) {
            throw new InterruptedException("soak interrupted");
        }
    }

    private static long total(Map<Leg, Long> legs) {
        return legs.values().stream().mapToLong(Long::longValue).sum();
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            final Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.3f ms", nanos / 1e6);
    }

    static String format(Duration d) {
        final long s = d.toSeconds();
        if (s == 0) {
            return d.toMillis() + "ms";
        }
        return s >= 3600 ? String.format(Locale.ROOT, "%dh%02dm%02ds", s / 3600, s / 60 % 60, s % 60)
                : s >= 60 ? String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60) : s + "s";
    }

    /** Parses {@code 30s}, {@code 10m}, {@code 1h30m}, {@code 500ms}, or ISO-8601 ({@code PT10M}). */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        private static final Pattern PART = Pattern.compile("(\\d+)(ms|s|m|h)");

        @Override
        public Duration convert(String value) {
            return parse(value);
        }

        static Duration parse(String value) {
            final String v = value.trim().toLowerCase(Locale.ROOT);
            if (v.startsWith("pt") || v.startsWith("p")) {
                return Duration.parse(value.trim().toUpperCase(Locale.ROOT));
            }
            final Matcher m = PART.matcher(v);
            Duration total = Duration.ZERO;
            int at = 0;
            while (m.find() && m.start() == at) {
                final long n = Long.parseLong(m.group(1));
                total = total.plus(switch (m.group(2)) {
                    case "ms" -> Duration.ofMillis(n);
                    case "s" -> Duration.ofSeconds(n);
                    case "m" -> Duration.ofMinutes(n);
                    default -> Duration.ofHours(n);
                });
                at = m.end();
            }
            if (at == 0 || at != v.length()) {
                throw new CommandLine.TypeConversionException("duration: " + value
                        + " (expected: e.g. 30s, 10m, 1h30m, 500ms or PT10M)");
            }
            return total;
        }
    }
}

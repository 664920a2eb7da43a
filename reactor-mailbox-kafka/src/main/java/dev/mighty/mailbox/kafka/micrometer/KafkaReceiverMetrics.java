package dev.mighty.mailbox.kafka.micrometer;

import java.lang.ref.WeakReference;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

import dev.mighty.mailbox.kafka.KafkaMailboxReceiver;
import dev.mighty.mailbox.kafka.KafkaReceiverStats;
import dev.mighty.mailbox.micrometer.MailboxMetrics;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * Binds a {@link KafkaMailboxReceiver}'s {@linkplain KafkaMailboxReceiver#stats() statistics} to a Micrometer
 * {@link MeterRegistry}:
 * <pre>{@code
 * KafkaMailboxReceiver<String, String> orders = KafkaMailboxReceiver.<String, String>builder(config)
 *         .topics(List.of("orders"))
 *         .build();
 * KafkaReceiverMetrics.monitor(registry, orders, Tags.of("service", "billing"));
 * MailboxMetrics.monitor(registry, orders.mailbox(), "service", "billing"); // the mailbox's own meters, if wanted
 * }</pre>
 *
 * <table>
 * <caption>Meters (names with the default prefix {@value #DEFAULT_PREFIX}; base unit {@code records} unless
 * stated)</caption>
 * <tr><th>name</th><th>tags</th><th>type</th><th>value</th></tr>
 * <tr><td>{@code kafka.receiver.assigned}</td><td></td><td>gauge ({@code partitions})</td><td>partitions
 * assigned now</td></tr>
 * <tr><td>{@code kafka.receiver.paused}</td><td></td><td>gauge ({@code partitions})</td><td>assigned
 * partitions paused now, for mailbox room or at the bound</td></tr>
 * <tr><td>{@code kafka.receiver.at.bound}</td><td></td><td>gauge ({@code partitions})</td><td>partitions
 * paused because their unacknowledged records reached {@code maxUnacknowledged}</td></tr>
 * <tr><td>{@code kafka.receiver.unacknowledged}</td><td></td><td>gauge</td><td>records delivered and not yet
 * acknowledged</td></tr>
 * <tr><td>{@code kafka.receiver.oldest.unacknowledged.age}</td><td></td><td>time gauge</td><td>how long the oldest
 * unacknowledged record has been the oldest of its partition; 0 when all are acknowledged</td></tr>
 * <tr><td>{@code kafka.receiver.lag}</td><td></td><td>gauge</td><td>records in the log past the consumer's position,
 * as of each partition's last fetch; {@code NaN} while the consumer knows no partition's lag</td></tr>
 * <tr><td>{@code kafka.receiver.commits}</td><td>{@code result=success}</td><td>function timer</td><td>commits that
 * succeeded, and their total time</td></tr>
 * <tr><td>{@code kafka.receiver.commits}</td><td>{@code result=failure}</td><td>function timer</td><td>commits that
 * failed, and their total time</td></tr>
 * </table>
 * Every meter carries the tags {@value #GROUP_TAG}{@code =}{@link KafkaReceiverStats#groupId() group.id} and
 * {@value #TOPICS_TAG}{@code =}{@link KafkaReceiverStats#topics() the topics}, plus the caller's tags (a caller's tag
 * of the same key replaces ours). The names follow {@link MailboxMetrics}: a prefix, lower-case dot-separated words,
 * and one meter with a tag ({@value #RESULT_TAG}) where two figures are two cases of one thing;
 * {@link #KafkaReceiverMetrics(KafkaMailboxReceiver, String, Iterable)} takes another prefix. What each figure means
 * precisely (what the lag leaves out, what a commit's time includes) is in {@link KafkaReceiverStats}.
 *
 * <h2>Threads</h2>
 * {@link #bindTo} from any thread. The meters read {@link KafkaMailboxReceiver#stats()} from whichever thread the
 * registry publishes on; it may be called from any thread.
 *
 * <h2>Progress and cost</h2>
 * Nothing is added to the receiver's poll loop or to acknowledgements: the poll thread refreshes its snapshot anyway
 * (at most every 100 ms, see {@link KafkaMailboxReceiver#stats()}), and a meter read is a volatile load of it,
 * wait-free, allocating nothing.
 *
 * <h2>Visibility</h2>
 * The meters of one publication may read two snapshots (the poll thread may publish one between two meters), each
 * one cut of the poll thread's state at its refresh; the figures are as of the refresh, not of the read.
 *
 * <h2>References</h2>
 * The binder and its meters hold the receiver weakly, as {@link MailboxMetrics} holds a mailbox: monitoring never
 * keeps a receiver alive (a running receiver is kept alive by its poll thread anyway). Once it is collected the
 * gauges report {@code NaN} and the function timers their last figures; remove them from the registry to reuse the
 * tags. Two receivers of one group and the same topics in one process share one meter id per meter, and the
 * registry keeps the first: tell them apart with a tag of yours (e.g. {@code member}).
 */
public final class KafkaReceiverMetrics implements MeterBinder {
    /** The default name prefix: every meter is named {@code kafka.receiver.<what>}. */
    public static final String DEFAULT_PREFIX = "kafka.receiver";
    /** The tag carrying the receiver's consumer group ({@code group.id}). */
    public static final String GROUP_TAG = "group";
    /** The tag carrying the receiver's topics, comma-separated (or its pattern). */
    public static final String TOPICS_TAG = "topics";
    /** The tag of {@code kafka.receiver.commits}: {@code success} or {@code failure}. */
    public static final String RESULT_TAG = "result";

    private static final String PARTITIONS = "partitions";
    private static final String RECORDS = "records";

    private final WeakReference<KafkaMailboxReceiver<?, ?>> receiver;
    private final String prefix;
    private final Tags tags;

    /**
     * Binds {@code receiver} with the default prefix and only the {@value #GROUP_TAG} and {@value #TOPICS_TAG} tags.
     *
     * @param receiver the receiver to measure, held weakly
     * @throws NullPointerException if {@code receiver} is null
     */
    public KafkaReceiverMetrics(KafkaMailboxReceiver<?, ?> receiver) {
        this(receiver, DEFAULT_PREFIX, Tags.empty());
    }

    /**
     * Binds {@code receiver} with the default prefix and {@code tags} added to ours.
     *
     * @param receiver the receiver to measure, held weakly
     * @param tags     added to the {@value #GROUP_TAG} and {@value #TOPICS_TAG} tags
     * @throws NullPointerException if an argument is null
     */
    public KafkaReceiverMetrics(KafkaMailboxReceiver<?, ?> receiver, Iterable<Tag> tags) {
        this(receiver, DEFAULT_PREFIX, tags);
    }

    /**
     * Creates the binder for a receiver, with a meter name prefix and extra tags.
     *
     * @param receiver the receiver to measure, held weakly
     * @param prefix   the first part of every meter name, e.g. {@value #DEFAULT_PREFIX} (the default) or
     *                 {@code "billing.orders"}
     * @param tags     added to the {@value #GROUP_TAG} and {@value #TOPICS_TAG} tags
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code prefix} is empty
     */
    public KafkaReceiverMetrics(KafkaMailboxReceiver<?, ?> receiver, String prefix, Iterable<Tag> tags) {
        Objects.requireNonNull(receiver, "receiver");
        Objects.requireNonNull(prefix, "prefix");
        if (prefix.isEmpty()) {
            throw new IllegalArgumentException("prefix: \"\" (expected: non-empty, e.g. \"kafka.receiver\")");
        }
        final KafkaReceiverStats stats = receiver.stats();
        this.receiver = new WeakReference<>(receiver);
        this.prefix = prefix;
        this.tags = Tags.of(GROUP_TAG, stats.groupId(), TOPICS_TAG, stats.topics())
                .and(Objects.requireNonNull(tags, "tags"));
    }

    /**
     * Binds {@code receiver} to {@code registry} with the default prefix.
     *
     * @param <R> the receiver's type
     * @param registry the registry to register the meters with
     * @param receiver the receiver to measure, held weakly
     * @param tags added to the {@value #GROUP_TAG} and {@value #TOPICS_TAG} tags
     * @return {@code receiver}, for chaining at construction
     * @throws NullPointerException if an argument is null
     */
    public static <R extends KafkaMailboxReceiver<?, ?>> R monitor(MeterRegistry registry, R receiver,
            Iterable<Tag> tags) {
        new KafkaReceiverMetrics(receiver, tags).bindTo(registry);
        return receiver;
    }

    /**
     * Binds {@code receiver} to {@code registry} with the default prefix.
     *
     * @param <R> the receiver's type
     * @param registry the registry to register the meters with
     * @param receiver the receiver to measure, held weakly
     * @param tags key/value pairs, as {@link Tags#of(String...)}
     * @return {@code receiver}, for chaining at construction
     * @throws NullPointerException if {@code registry}, {@code receiver} or a tag key or value is null
     * @throws IllegalArgumentException if {@code tags} has an odd length
     */
    public static <R extends KafkaMailboxReceiver<?, ?>> R monitor(MeterRegistry registry, R receiver,
            String... tags) {
        return monitor(registry, receiver, Tags.of(tags));
    }

    /** Registers the meters; does nothing if the receiver has been collected already. */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        final KafkaMailboxReceiver<?, ?> r = receiver.get();
        if (r == null) {
            return;
        }
        gauge(registry, "assigned", r, s -> s.assignedPartitions(), PARTITIONS,
                "Partitions assigned to the receiver now");
        gauge(registry, "paused", r, s -> s.pausedPartitions(), PARTITIONS,
                "Assigned partitions paused now: all while the mailbox has no room for a poll, else those at the"
                        + " bound");
        gauge(registry, "at.bound", r, s -> s.partitionsAtBound(), PARTITIONS,
                "Partitions paused because their unacknowledged records reached maxUnacknowledged");
        gauge(registry, "unacknowledged", r, s -> s.unacknowledged(), RECORDS,
                "Records delivered into the mailbox and not yet acknowledged");
        TimeGauge.builder(prefix + ".oldest.unacknowledged.age", r, TimeUnit.NANOSECONDS,
                        x -> x.stats().oldestUnacknowledgedNanos())
                .tags(tags)
                .description("How long the oldest unacknowledged record has been the oldest of its partition; 0 when"
                        + " all are acknowledged")
                .register(registry);
        gauge(registry, "lag", r, s -> s.lag() < 0 ? Double.NaN : s.lag(), RECORDS,
                "Records in the log past the consumer's position, as of each partition's last fetch");
        final String commits = "Commits completed (periodic commitAsync, commitSync on revocation and close) and their"
                + " time from the call to the completion on the poll thread";
        timer(registry, "success", r, KafkaReceiverStats::commits, KafkaReceiverStats::commitNanos, commits);
        timer(registry, "failure", r, KafkaReceiverStats::failedCommits, KafkaReceiverStats::failedCommitNanos,
                commits);
    }

    private void gauge(MeterRegistry registry, String name, KafkaMailboxReceiver<?, ?> r,
            ToDoubleFunction<KafkaReceiverStats> value, String unit, String description) {
        // Gauge.builder holds r weakly unless strongReference(true)
        Gauge.builder(prefix + "." + name, r, x -> value.applyAsDouble(x.stats()))
                .tags(tags)
                .baseUnit(unit)
                .description(description)
                .register(registry);
    }

    private void timer(MeterRegistry registry, String result, KafkaMailboxReceiver<?, ?> r,
            ToLongFunction<KafkaReceiverStats> count, ToLongFunction<KafkaReceiverStats> totalNanos,
            String description) {
        // FunctionTimer holds r weakly
        FunctionTimer.builder(prefix + ".commits", r, x -> count.applyAsLong(x.stats()),
                        x -> totalNanos.applyAsLong(x.stats()), TimeUnit.NANOSECONDS)
                .tags(tags.and(RESULT_TAG, result))
                .description(description)
                .register(registry);
    }

    @Override
    public String toString() {
        return "KafkaReceiverMetrics[prefix=" + prefix + ", tags=" + tags + "]";
    }
}

package dev.mighty.mailbox.micrometer;

import java.lang.ref.WeakReference;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

import dev.mighty.mailbox.Mailbox;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;

/**
 * Binds a {@link Mailbox}'s {@linkplain Mailbox#stats() statistics} to a Micrometer {@link MeterRegistry}:
 * <pre>{@code
 * Mailbox<Order> orders = Mailboxes.<Order>builder().capacity(4096).name("orders").build();
 * MailboxMetrics.monitor(registry, orders, Tags.of("service", "billing"));
 * }</pre>
 *
 * <table>
 * <caption>Meters (names with the default prefix {@value #DEFAULT_PREFIX}; base unit {@code messages} unless
 * stated)</caption>
 * <tr><th>name</th><th>tags</th><th>type</th><th>value</th></tr>
 * <tr><td>{@code mailbox.capacity}</td><td></td><td>gauge</td><td>{@link Mailbox#capacity()}</td></tr>
 * <tr><td>{@code mailbox.size}</td><td></td><td>gauge</td><td>{@link Mailbox#size()}</td></tr>
 * <tr><td>{@code mailbox.high.water}</td><td></td><td>gauge</td><td>the high-water mark</td></tr>
 * <tr><td>{@code mailbox.reserved}</td><td></td><td>gauge</td><td>slots reserved by a subscriber</td></tr>
 * <tr><td>{@code mailbox.admitted}</td><td></td><td>function counter</td><td>messages admitted</td></tr>
 * <tr><td>{@code mailbox.received}</td><td></td><td>function counter</td><td>messages received</td></tr>
 * <tr><td>{@code mailbox.refused}</td><td>{@code reason=full}</td><td>function counter</td><td>sends refused
 * because the mailbox was full</td></tr>
 * <tr><td>{@code mailbox.refused}</td><td>{@code reason=closed}</td><td>function counter</td><td>sends
 * rejected because the mailbox was closed</td></tr>
 * <tr><td>{@code mailbox.parked}</td><td>{@code side=producer}</td><td>gauge ({@code threads})</td><td>producers
 * parked now on the full mailbox</td></tr>
 * <tr><td>{@code mailbox.parked}</td><td>{@code side=consumer}</td><td>gauge ({@code threads})</td><td>1 if the
 * consumer waits for data now, else 0</td></tr>
 * <tr><td>{@code mailbox.parks}</td><td>{@code side=producer}</td><td>function counter ({@code events})</td>
 * <td>times a producer parked on the full mailbox (or a subscriber waited for room)</td></tr>
 * <tr><td>{@code mailbox.parks}</td><td>{@code side=consumer}</td><td>function counter ({@code events})</td>
 * <td>times the consumer parked on the empty mailbox (or a publisher's drain waited for data)</td></tr>
 * <tr><td>{@code mailbox.demand}</td><td></td><td>gauge (no unit)</td><td>outstanding demand, only with
 * {@link #withDemand}</td></tr>
 * </table>
 * Every meter carries the tag {@value #NAME_TAG}{@code =}{@link dev.mighty.mailbox.MailboxStats#name() name}
 * plus the caller's tags (a caller's {@value #NAME_TAG} tag replaces ours). The names follow Micrometer's own
 * binders ({@code jvm.memory.used}, {@code executor.completed} with a {@code name} tag): a prefix for the
 * library, then lower-case dot-separated words, and one meter with a tag ({@value #REASON_TAG},
 * {@value #SIDE_TAG}) where two counts are two cases of one thing, so that their sum means something;
 * {@link #MailboxMetrics(Mailbox, String, Iterable)} takes another prefix.
 *
 * <h2>Threads</h2>
 * {@link #bindTo} from any thread. The meters read the mailbox from whichever thread the registry publishes
 * on; they call only the mailbox's read-only methods, which any thread may call.
 *
 * <h2>Progress and cost</h2>
 * Nothing is added to the mailbox's send or receive paths: every figure is read when the registry polls it,
 * from state the mailbox keeps anyway (see {@code docs/observability.md}). A poll is lock-free and allocates one
 * small {@code MailboxStats} record per meter read.
 *
 * <h2>Visibility</h2>
 * Each value is read separately, so the values of one publication are individually correct but not one atomic
 * cut: {@code admitted - received} may differ from {@code size} under load.
 *
 * <h2>References</h2>
 * The binder and its meters hold the mailbox (and a demand source) weakly, as Micrometer's gauges and function
 * counters do by default: monitoring never keeps a mailbox alive. Once it is collected the gauges report
 * {@code NaN} and the function counters their last count; remove them from the registry if the mailbox's name
 * is to be reused with the same tags. Two mailboxes bound with the same name and tags share one meter id, and
 * the registry keeps the first: give each mailbox its own
 * {@link dev.mighty.mailbox.MailboxBuilder#name(String) name} or tags.
 */
public final class MailboxMetrics implements MeterBinder {
    /** The default name prefix: every meter is named {@code mailbox.<what>}. */
    public static final String DEFAULT_PREFIX = "mailbox";
    /** The tag carrying the mailbox's {@linkplain dev.mighty.mailbox.MailboxBuilder#name(String) name}. */
    public static final String NAME_TAG = "name";
    /** The tag of {@code mailbox.refused}: {@code full} or {@code closed}. */
    public static final String REASON_TAG = "reason";
    /** The tag of {@code mailbox.parked} and {@code mailbox.parks}: {@code producer} or {@code consumer}. */
    public static final String SIDE_TAG = "side";

    private final WeakReference<Mailbox<?>> mailbox;
    private final String prefix;
    private final Tags tags;
    private final WeakReference<Object> demandSource;
    private final ToDoubleFunction<Object> demand;

    /**
     * Binds {@code mailbox} with the default prefix and only the {@value #NAME_TAG} tag.
     *
     * @param mailbox the mailbox to measure, held weakly
     * @throws NullPointerException if {@code mailbox} is null
     */
    public MailboxMetrics(Mailbox<?> mailbox) {
        this(mailbox, DEFAULT_PREFIX, Tags.empty());
    }

    /**
     * Binds {@code mailbox} with the default prefix and {@code tags} added to the {@value #NAME_TAG} tag.
     *
     * @param mailbox the mailbox to measure, held weakly
     * @param tags    added to the {@value #NAME_TAG} tag
     * @throws NullPointerException if an argument is null
     */
    public MailboxMetrics(Mailbox<?> mailbox, Iterable<Tag> tags) {
        this(mailbox, DEFAULT_PREFIX, tags);
    }

    /**
     * Creates the binder for a mailbox, with a meter name prefix and extra tags.
     *
     * @param mailbox the mailbox to measure, held weakly
     * @param prefix  the first part of every meter name, e.g. {@value #DEFAULT_PREFIX} (the default) or
     *                {@code "billing.mailbox"}
     * @param tags    added to the {@value #NAME_TAG} tag
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code prefix} is empty
     */
    public MailboxMetrics(Mailbox<?> mailbox, String prefix, Iterable<Tag> tags) {
        this(new WeakReference<>(Objects.requireNonNull(mailbox, "mailbox")), checkPrefix(prefix),
                Tags.of(NAME_TAG, mailbox.stats().name()).and(Objects.requireNonNull(tags, "tags")), null, null);
    }

    private MailboxMetrics(WeakReference<Mailbox<?>> mailbox, String prefix, Tags tags,
            WeakReference<Object> demandSource, ToDoubleFunction<Object> demand) {
        this.mailbox = mailbox;
        this.prefix = prefix;
        this.tags = tags;
        this.demandSource = demandSource;
        this.demand = demand;
    }

    /**
     * Binds {@code mailbox} to {@code registry} with the default prefix.
     *
     * @param <M> the mailbox's type
     * @param registry the registry to register the meters with
     * @param mailbox the mailbox to measure, held weakly
     * @param tags added to the {@value #NAME_TAG} tag
     * @return {@code mailbox}, for chaining at construction
     * @throws NullPointerException if an argument is null
     */
    public static <M extends Mailbox<?>> M monitor(MeterRegistry registry, M mailbox, Iterable<Tag> tags) {
        new MailboxMetrics(mailbox, tags).bindTo(registry);
        return mailbox;
    }

    /**
     * Binds {@code mailbox} to {@code registry} with the default prefix.
     *
     * @param <M> the mailbox's type
     * @param registry the registry to register the meters with
     * @param mailbox the mailbox to measure, held weakly
     * @param tags key/value pairs, as {@link Tags#of(String...)}
     * @return {@code mailbox}, for chaining at construction
     * @throws NullPointerException if {@code registry}, {@code mailbox} or a tag key or value is null
     * @throws IllegalArgumentException if {@code tags} has an odd length
     */
    public static <M extends Mailbox<?>> M monitor(MeterRegistry registry, M mailbox, String... tags) {
        return monitor(registry, mailbox, Tags.of(tags));
    }

    /**
     * Adds a {@code <prefix>.demand} gauge: the demand a consumer face has received and not yet served, which
     * the mailbox itself does not know. For example, for a {@code MailboxFlux}, whose {@code Scannable} reports
     * its live subscription's demand:
     * <pre>{@code
     * Flux<Order> flux = MailboxFlux.from(orders);
     * new MailboxMetrics(orders)
     *         .withDemand(flux, f -> Scannable.from(f).scanOrDefault(Scannable.Attr.REQUESTED_FROM_DOWNSTREAM, 0L))
     *         .bindTo(registry);
     * }</pre>
     *
     * @param <S>     the adapter's type
     * @param source  the adapter, held weakly
     * @param demand  reads the outstanding demand from {@code source}; called on the registry's thread, so it
     *                must be safe to call from any thread
     * @return a new binder with the gauge; this one is unchanged
     * @throws NullPointerException if an argument is null
     */
    @SuppressWarnings("unchecked") // demand accepts S and is only ever applied to the S held in demandSource
    public <S> MailboxMetrics withDemand(S source, ToDoubleFunction<? super S> demand) {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(demand, "demand");
        return new MailboxMetrics(mailbox, prefix, tags, new WeakReference<>(source),
                (ToDoubleFunction<Object>) demand);
    }

    /** Registers the meters; does nothing if the mailbox has been collected already. */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        final Mailbox<?> mb = mailbox.get();
        if (mb == null) {
            return;
        }
        gauge(registry, "capacity", Tags.empty(), mb, Mailbox::capacity, BaseUnits.MESSAGES,
                "The mailbox's capacity, a power of two");
        gauge(registry, "size", Tags.empty(), mb, Mailbox::size, BaseUnits.MESSAGES,
                "Messages admitted and not yet received");
        gauge(registry, "high.water", Tags.empty(), mb, m -> m.stats().highWaterMark(), BaseUnits.MESSAGES,
                "The highest size seen since creation or the last resetHighWaterMark() (sampled: a lower bound)");
        gauge(registry, "reserved", Tags.empty(), mb, m -> m.stats().reserved(), BaseUnits.MESSAGES,
                "Slots reserved by a subscriber for messages it requested and has not yet sent");
        counter(registry, "admitted", Tags.empty(), mb, m -> m.stats().admitted(), BaseUnits.MESSAGES,
                "Messages admitted since creation");
        counter(registry, "received", Tags.empty(), mb, m -> m.stats().received(), BaseUnits.MESSAGES,
                "Messages received since creation");
        final String refused = "Sends refused: full (trySend false, a timed send timing out) or closed";
        counter(registry, "refused", Tags.of(REASON_TAG, "full"), mb, m -> m.stats().refused(), BaseUnits.MESSAGES,
                refused);
        counter(registry, "refused", Tags.of(REASON_TAG, "closed"), mb, m -> m.stats().rejectedClosed(),
                BaseUnits.MESSAGES, refused);
        final String parked = "Threads parked now: producers on the full mailbox, the consumer (0 or 1) for data";
        gauge(registry, "parked", Tags.of(SIDE_TAG, "producer"), mb, m -> m.stats().parkedProducers(),
                BaseUnits.THREADS, parked);
        gauge(registry, "parked", Tags.of(SIDE_TAG, "consumer"), mb, m -> m.stats().consumerParked() ? 1.0 : 0.0,
                BaseUnits.THREADS, parked);
        final String parks = "Times a producer parked on the full mailbox (or a subscriber waited for room), or the"
                + " consumer on the empty one (or a publisher's drain waited for data)";
        counter(registry, "parks", Tags.of(SIDE_TAG, "producer"), mb, m -> m.stats().producerParks(),
                BaseUnits.EVENTS, parks);
        counter(registry, "parks", Tags.of(SIDE_TAG, "consumer"), mb, m -> m.stats().consumerParks(),
                BaseUnits.EVENTS, parks);
        final Object source = demandSource == null ? null : demandSource.get();
        if (source != null) {
            gauge(registry, "demand", Tags.empty(), source, demand, null,
                    "Demand received by the adapter and not yet served");
        }
    }

    private <T> void gauge(MeterRegistry registry, String name, Tags which, T obj, ToDoubleFunction<T> value,
            String unit, String description) {
        // Gauge.builder holds obj weakly unless strongReference(true)
        Gauge.builder(prefix + "." + name, obj, value)
                .tags(tags.and(which))
                .baseUnit(unit)
                .description(description)
                .register(registry);
    }

    private <T> void counter(MeterRegistry registry, String name, Tags which, T obj, ToDoubleFunction<T> value,
            String unit, String description) {
        // FunctionCounter holds obj weakly
        FunctionCounter.builder(prefix + "." + name, obj, value)
                .tags(tags.and(which))
                .baseUnit(unit)
                .description(description)
                .register(registry);
    }

    private static String checkPrefix(String prefix) {
        Objects.requireNonNull(prefix, "prefix");
        if (prefix.isEmpty()) {
            throw new IllegalArgumentException("prefix: \"\" (expected: non-empty, e.g. \"mailbox\")");
        }
        return prefix;
    }

    @Override
    public String toString() {
        return "MailboxMetrics[prefix=" + prefix + ", tags=" + tags + "]";
    }
}

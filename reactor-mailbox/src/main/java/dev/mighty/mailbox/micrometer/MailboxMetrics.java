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
 * <tr><th>name</th><th>type</th><th>value</th></tr>
 * <tr><td>{@code reactor.mailbox.capacity}</td><td>gauge</td><td>{@link Mailbox#capacity()}</td></tr>
 * <tr><td>{@code reactor.mailbox.size}</td><td>gauge</td><td>{@link Mailbox#size()}</td></tr>
 * <tr><td>{@code reactor.mailbox.high.water}</td><td>gauge</td><td>the high-water mark</td></tr>
 * <tr><td>{@code reactor.mailbox.reserved}</td><td>gauge</td><td>slots reserved by a subscriber</td></tr>
 * <tr><td>{@code reactor.mailbox.admitted}</td><td>function counter</td><td>messages admitted</td></tr>
 * <tr><td>{@code reactor.mailbox.received}</td><td>function counter</td><td>messages received</td></tr>
 * <tr><td>{@code reactor.mailbox.refused}</td><td>function counter</td><td>sends refused, full</td></tr>
 * <tr><td>{@code reactor.mailbox.rejected}</td><td>function counter</td><td>sends rejected, closed</td></tr>
 * <tr><td>{@code reactor.mailbox.producers.parked}</td><td>gauge ({@code threads})</td><td>producers parked
 * now</td></tr>
 * <tr><td>{@code reactor.mailbox.consumer.parked}</td><td>gauge (no unit)</td><td>1 if the consumer waits for
 * data, else 0</td></tr>
 * <tr><td>{@code reactor.mailbox.producer.parks}</td><td>function counter ({@code events})</td><td>times a
 * producer parked on the full mailbox (or a subscriber waited for room)</td></tr>
 * <tr><td>{@code reactor.mailbox.consumer.parks}</td><td>function counter ({@code events})</td><td>times the
 * consumer parked on the empty mailbox (or a publisher's drain waited for data)</td></tr>
 * <tr><td>{@code reactor.mailbox.demand}</td><td>gauge (no unit)</td><td>outstanding demand, only with
 * {@link #withDemand}</td></tr>
 * </table>
 * Every meter carries the tag {@value #MAILBOX_TAG}{@code =}{@link dev.mighty.mailbox.MailboxStats#name() name}
 * plus the caller's tags (a caller's {@value #MAILBOX_TAG} tag replaces ours). The names follow
 * {@code reactor-core-micrometer}: a prefix (there {@code "reactor"} or the sequence's {@code name(String)}),
 * then lower-case dot-separated words, as in {@code reactor.scheduler.tasks.completed} or
 * {@code reactor.flow.duration}; {@link #MailboxMetrics(Mailbox, String, Iterable)} takes another prefix.
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
    /** The default name prefix, as {@code reactor-core-micrometer}'s. */
    public static final String DEFAULT_PREFIX = "reactor";
    /** The tag carrying the mailbox's name. */
    public static final String MAILBOX_TAG = "mailbox";

    private final WeakReference<Mailbox<?>> mailbox;
    private final String prefix;
    private final Tags tags;
    private final WeakReference<Object> demandSource;
    private final ToDoubleFunction<Object> demand;

    /**
     * Binds {@code mailbox} with the default prefix and only the {@value #MAILBOX_TAG} tag.
     *
     * @param mailbox the mailbox to measure, held weakly
     * @throws NullPointerException if {@code mailbox} is null
     */
    public MailboxMetrics(Mailbox<?> mailbox) {
        this(mailbox, DEFAULT_PREFIX, Tags.empty());
    }

    /**
     * Binds {@code mailbox} with the default prefix and {@code tags} added to the {@value #MAILBOX_TAG} tag.
     *
     * @param mailbox the mailbox to measure, held weakly
     * @param tags    added to the {@value #MAILBOX_TAG} tag
     * @throws NullPointerException if an argument is null
     */
    public MailboxMetrics(Mailbox<?> mailbox, Iterable<Tag> tags) {
        this(mailbox, DEFAULT_PREFIX, tags);
    }

    /**
     * @param mailbox the mailbox to measure, held weakly
     * @param prefix  the first part of every meter name, e.g. {@value #DEFAULT_PREFIX}
     * @param tags    added to the {@value #MAILBOX_TAG} tag
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code prefix} is empty
     */
    public MailboxMetrics(Mailbox<?> mailbox, String prefix, Iterable<Tag> tags) {
        this(new WeakReference<>(Objects.requireNonNull(mailbox, "mailbox")), checkPrefix(prefix),
                Tags.of(MAILBOX_TAG, mailbox.stats().name()).and(Objects.requireNonNull(tags, "tags")), null, null);
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
     * @param tags added to the {@value #MAILBOX_TAG} tag
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
     * Adds a {@code <prefix>.mailbox.demand} gauge: the demand a Reactive Streams adapter has received and not
     * yet served, which the mailbox itself does not know. For example, with an adapter that exposes it:
     * {@code new MailboxMetrics(mb).withDemand(publisher, p -> p.requested())}.
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
        gauge(registry, "capacity", mb, Mailbox::capacity, BaseUnits.MESSAGES,
                "The mailbox's capacity, a power of two");
        gauge(registry, "size", mb, Mailbox::size, BaseUnits.MESSAGES,
                "Messages admitted and not yet received");
        gauge(registry, "high.water", mb, m -> m.stats().highWaterMark(), BaseUnits.MESSAGES,
                "The highest size seen since creation or the last resetHighWaterMark() (sampled: a lower bound)");
        gauge(registry, "reserved", mb, m -> m.stats().reserved(), BaseUnits.MESSAGES,
                "Slots reserved by a subscriber for messages it requested and has not yet sent");
        counter(registry, "admitted", mb, m -> m.stats().admitted(), BaseUnits.MESSAGES,
                "Messages admitted since creation");
        counter(registry, "received", mb, m -> m.stats().received(), BaseUnits.MESSAGES,
                "Messages received since creation");
        counter(registry, "refused", mb, m -> m.stats().refused(), BaseUnits.MESSAGES,
                "Sends refused because the mailbox was full (trySend false, or a timed send timing out)");
        counter(registry, "rejected", mb, m -> m.stats().rejectedClosed(), BaseUnits.MESSAGES,
                "Sends rejected because the mailbox was closed");
        gauge(registry, "producers.parked", mb, m -> m.stats().parkedProducers(), BaseUnits.THREADS,
                "Producers parked now on the full mailbox");
        gauge(registry, "consumer.parked", mb, m -> m.stats().consumerParked() ? 1.0 : 0.0, null,
                "1 if the consumer is waiting for data now, else 0");
        counter(registry, "producer.parks", mb, m -> m.stats().producerParks(), BaseUnits.EVENTS,
                "Times a producer parked on the full mailbox (or a subscriber waited for room)");
        counter(registry, "consumer.parks", mb, m -> m.stats().consumerParks(), BaseUnits.EVENTS,
                "Times the consumer parked on the empty mailbox (or a publisher's drain waited for data)");
        final Object source = demandSource == null ? null : demandSource.get();
        if (source != null) {
            gauge(registry, "demand", source, demand, null,
                    "Demand received by the adapter and not yet served");
        }
    }

    private <T> void gauge(MeterRegistry registry, String name, T obj, ToDoubleFunction<T> value, String unit,
            String description) {
        // Gauge.builder holds obj weakly unless strongReference(true)
        Gauge.builder(prefix + ".mailbox." + name, obj, value)
                .tags(tags)
                .baseUnit(unit)
                .description(description)
                .register(registry);
    }

    private <T> void counter(MeterRegistry registry, String name, T obj, ToDoubleFunction<T> value, String unit,
            String description) {
        // FunctionCounter holds obj weakly
        FunctionCounter.builder(prefix + ".mailbox." + name, obj, value)
                .tags(tags)
                .baseUnit(unit)
                .description(description)
                .register(registry);
    }

    private static String checkPrefix(String prefix) {
        Objects.requireNonNull(prefix, "prefix");
        if (prefix.isEmpty()) {
            throw new IllegalArgumentException("prefix: \"\" (expected: non-empty, e.g. \"reactor\")");
        }
        return prefix;
    }

    @Override
    public String toString() {
        return "MailboxMetrics[prefix=" + prefix + ", tags=" + tags + "]";
    }
}

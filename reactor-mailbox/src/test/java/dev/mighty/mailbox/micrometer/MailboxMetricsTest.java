package dev.mighty.mailbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import dev.mighty.mailbox.Hang;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.mighty.mailbox.FrameMailbox;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.MessageFrame;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.reactor.MailboxFlux;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.reactivestreams.Subscription;
import reactor.core.Scannable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;

@Timeout(value = 300, unit = TimeUnit.SECONDS)
class MailboxMetricsTest {
    /** Every meter, as {@code name} or {@code name{key=value}} for the meters that carry a tag of their own. */
    private static final List<String> METERS = List.of(
            "mailbox.capacity", "mailbox.size", "mailbox.high.water", "mailbox.reserved", "mailbox.admitted",
            "mailbox.received", "mailbox.refused{reason=full}", "mailbox.refused{reason=closed}",
            "mailbox.parked{side=producer}", "mailbox.parked{side=consumer}", "mailbox.parks{side=producer}",
            "mailbox.parks{side=consumer}");

    private final MeterRegistry registry = new SimpleMeterRegistry();

    @Test
    void shouldRegisterEveryMeterTaggedWithTheMailboxNameWhenBound() {
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(8).name("orders").build();

        assertThat(MailboxMetrics.monitor(registry, mb, "service", "billing")).isSameAs(mb);

        assertThat(registry.getMeters().stream().map(MailboxMetricsTest::key).collect(Collectors.toList()))
                .containsExactlyInAnyOrderElementsOf(METERS);
        for (Meter meter : registry.getMeters()) {
            assertThat(meter.getId().getTags()).as(meter.getId().getName())
                    .contains(Tag.of("name", "orders"), Tag.of("service", "billing"))
                    .allMatch(t -> List.of("name", "service", "reason", "side").contains(t.getKey()));
        }
        assertThat(registry.get("mailbox.admitted").functionCounter().getId().getBaseUnit())
                .isEqualTo("messages");
        assertThat(registry.get("mailbox.parked").tag("side", "producer").gauge().getId().getBaseUnit())
                .isEqualTo("threads");
    }

    @Test
    void shouldEqualStatsAfterEveryStepOfASequence() throws InterruptedException {
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(4).name("sequence").build();
        final MailboxRing<String> ring = MailboxRing.of(mb);
        new MailboxMetrics(mb).bindTo(registry);
        assertMetersEqualStats(mb);

        assertThat(mb.trySend("a")).isTrue();
        assertThat(mb.trySend("b")).isTrue();
        assertMetersEqualStats(mb);

        assertThat(ring.reserve(2)).isEqualTo(2);
        assertThat(mb.trySend("c")).isFalse();
        assertThat(mb.send("d", Duration.ZERO)).isFalse();
        assertMetersEqualStats(mb);
        assertThat(value("mailbox.refused{reason=full}")).isEqualTo(2.0);
        assertThat(value("mailbox.reserved")).isEqualTo(2.0);

        assertThat(ring.sendReserved("e")).isTrue();
        ring.releaseReserved(1);
        assertThat(mb.tryRecvMany(m -> { }, 10)).isEqualTo(3);
        assertMetersEqualStats(mb);
        assertThat(value("mailbox.received")).isEqualTo(3.0);
        assertThat(value("mailbox.high.water")).isEqualTo(3.0);

        mb.close();
        assertThatThrownBy(() -> mb.trySend("f")).isInstanceOf(MailboxClosedException.class);
        assertMetersEqualStats(mb);
        assertThat(value("mailbox.refused{reason=closed}")).isEqualTo(1.0);
        assertThat(value("mailbox.size")).isZero();
        assertThat(value("mailbox.capacity")).isEqualTo(4.0);
    }

    @Test
    void shouldEqualStatsWhenTheMailboxIsAFrameMailbox() {
        final FrameMailbox mb = Mailboxes.<MessageFrame>builder().capacity(2).name("frames").buildFrames();
        new MailboxMetrics(mb, Tags.of("kind", "frames")).bindTo(registry);

        assertThat(mb.trySend(MessageFrame.of(1, 1L))).isTrue();
        assertThat(mb.trySend(MessageFrame.of(1, 2L))).isTrue();
        assertThat(mb.trySend(MessageFrame.of(1, 3L))).isFalse();

        assertMetersEqualStats(mb);
        assertThat(value("mailbox.size")).isEqualTo(2.0);
        assertThat(value("mailbox.refused{reason=full}")).isEqualTo(1.0);
    }

    @Test
    void shouldReportParkedProducerAndParkedConsumerWhileTheyWait() throws Exception {
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(1).name("waiters").build();
        new MailboxMetrics(mb).bindTo(registry);

        final Thread consumer = new Thread(() -> {
            try {
                mb.recv();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        consumer.start();
        awaitValue("mailbox.parked{side=consumer}", 1.0);
        awaitValue("mailbox.parks{side=consumer}", 1.0); // counted just before the park
        assertThat(mb.trySend("for the consumer")).isTrue();
        consumer.join(Hang.TIMEOUT.toMillis());
        assertThat(consumer.isAlive()).isFalse();
        assertThat(value("mailbox.parked{side=consumer}")).isZero();

        assertThat(mb.trySend("fill")).isTrue();
        final Thread producer = new Thread(() -> {
            try {
                mb.send("parked");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        producer.start();
        awaitValue("mailbox.parked{side=producer}", 1.0);
        assertThat(mb.tryRecv()).isEqualTo("fill");
        producer.join(Hang.TIMEOUT.toMillis());
        assertThat(producer.isAlive()).isFalse();
        assertThat(value("mailbox.parked{side=producer}")).isZero();
        assertThat(value("mailbox.parks{side=producer}")).as("cumulative").isGreaterThanOrEqualTo(1.0);
        assertThat(value("mailbox.parks{side=consumer}")).as("cumulative").isGreaterThanOrEqualTo(1.0);
        assertMetersEqualStats(mb);
    }

    @Test
    void shouldUseThePrefixWhenGiven() {
        final Mailbox<String> mb = Mailboxes.<String>builder().name("prefixed").build();

        new MailboxMetrics(mb, "app.inbox", Tags.empty()).bindTo(registry);

        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getName()).startsWith("app.inbox."));
        assertThat(registry.get("app.inbox.capacity").gauge().value()).isEqualTo(1024.0);
    }

    @Test
    void shouldLetTheCallersNameTagReplaceTheName() {
        final Mailbox<String> mb = Mailboxes.bounded(4); // default name "mailbox"

        new MailboxMetrics(mb, Tags.of("name", "inbox-7")).bindTo(registry);

        assertThat(registry.get("mailbox.size").tag("name", "inbox-7").gauge().value()).isZero();
    }

    @Test
    void shouldReportDemandFromTheAdapterWhenGiven() {
        final Mailbox<String> mb = Mailboxes.<String>builder().name("with-demand").build();
        final AtomicLong requested = new AtomicLong(42);

        new MailboxMetrics(mb).withDemand(requested, AtomicLong::get).bindTo(registry);

        assertThat(value("mailbox.demand")).isEqualTo(42.0);
        requested.set(Long.MAX_VALUE);
        assertThat(value("mailbox.demand")).isEqualTo((double) Long.MAX_VALUE);
        assertThat(registry.get("mailbox.demand").gauge().getId().getTag("name")).isEqualTo("with-demand");
    }

    @Test
    void shouldReportAFluxsDemandThroughItsScannableAsTheJavadocShows() {
        final Mailbox<String> orders = Mailboxes.<String>builder().name("orders").build();
        final Flux<String> flux = MailboxFlux.from(orders);
        new MailboxMetrics(orders)
                .withDemand(flux, f -> Scannable.from(f).scanOrDefault(Scannable.Attr.REQUESTED_FROM_DOWNSTREAM, 0L))
                .bindTo(registry);
        assertThat(value("mailbox.demand")).isZero();

        final BaseSubscriber<String> subscriber = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                request(7);
            }
        };
        flux.subscribe(subscriber);
        assertThat(value("mailbox.demand")).isEqualTo(7.0);
        subscriber.dispose();
    }

    @Test
    void shouldNotKeepTheMailboxAliveWhenBound() throws InterruptedException {
        final WeakReference<Mailbox<String>> ref = boundMailbox();

        final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
        while (ref.get() != null) {
            assertThat(System.nanoTime() - deadline).as("collected before the deadline").isNegative();
            System.gc();
            Thread.sleep(10);
        }
        assertThat(registry.get("mailbox.size").gauge().value()).isNaN();
        assertThat(registry.get("mailbox.admitted").functionCounter().count())
                .as("a function counter keeps the last count it read").isEqualTo(1.0);
    }

    @Test
    void shouldRejectBadArgumentsWhenConstructed() {
        final Mailbox<String> mb = Mailboxes.bounded(4);

        assertThatThrownBy(() -> new MailboxMetrics(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("mailbox");
        assertThatThrownBy(() -> new MailboxMetrics(mb, null)).isInstanceOf(NullPointerException.class)
                .hasMessage("tags");
        assertThatThrownBy(() -> new MailboxMetrics(mb, "", Tags.empty()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("prefix: \"\" (expected: non-empty, e.g. \"mailbox\")");
        assertThatThrownBy(() -> new MailboxMetrics(mb).withDemand(null, o -> 0.0))
                .isInstanceOf(NullPointerException.class).hasMessage("source");
        assertThatThrownBy(() -> new MailboxMetrics(mb).bindTo(null))
                .isInstanceOf(NullPointerException.class).hasMessage("registry");
    }

    // ------------------------------------------------------------------ helpers

    /** Binds a new mailbox with some traffic and returns only a weak reference to it. */
    private WeakReference<Mailbox<String>> boundMailbox() {
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(4).name("collected").build();
        new MailboxMetrics(mb).bindTo(registry);
        assertThat(mb.trySend("x")).isTrue();
        assertThat(value("mailbox.size")).isEqualTo(1.0);
        assertThat(value("mailbox.admitted")).isEqualTo(1.0);
        return new WeakReference<>(mb);
    }

    private void assertMetersEqualStats(Mailbox<?> mb) {
        final MailboxStats stats = mb.stats();
        assertThat(value("mailbox.capacity")).isEqualTo(stats.capacity());
        assertThat(value("mailbox.size")).isEqualTo(stats.size());
        assertThat(value("mailbox.high.water")).isEqualTo(stats.highWaterMark());
        assertThat(value("mailbox.reserved")).isEqualTo(stats.reserved());
        assertThat(value("mailbox.admitted")).isEqualTo(stats.admitted());
        assertThat(value("mailbox.received")).isEqualTo(stats.received());
        assertThat(value("mailbox.refused{reason=full}")).isEqualTo(stats.refused());
        assertThat(value("mailbox.refused{reason=closed}")).isEqualTo(stats.rejectedClosed());
        assertThat(value("mailbox.parked{side=producer}")).isEqualTo(stats.parkedProducers());
        assertThat(value("mailbox.parked{side=consumer}")).isEqualTo(stats.consumerParked() ? 1.0 : 0.0);
        assertThat(value("mailbox.parks{side=producer}")).isEqualTo(stats.producerParks());
        assertThat(value("mailbox.parks{side=consumer}")).isEqualTo(stats.consumerParks());
    }

    /**
     * The value of the only meter {@code key} names ({@code name} or {@code name{tag=value}}, as in
     * {@link #METERS}): a gauge's value or a function counter's count.
     */
    private double value(String key) {
        final int brace = key.indexOf('{');
        final Meter meter = brace < 0 ? registry.get(key).meter()
                : registry.get(key.substring(0, brace))
                        .tag(key.substring(brace + 1, key.indexOf('=')), key.substring(key.indexOf('=') + 1,
                                key.length() - 1))
                        .meter();
        return meter.measure().iterator().next().getValue();
    }

    /** @return the meter as {@code name}, or {@code name{tag=value}} with its reason or side tag */
    private static String key(Meter meter) {
        final String name = meter.getId().getName();
        for (String own : List.of("reason", "side")) {
            final String value = meter.getId().getTag(own);
            if (value != null) {
                return name + "{" + own + "=" + value + "}";
            }
        }
        return name;
    }

    private void awaitValue(String name, double expected) throws InterruptedException {
        final long deadline = System.nanoTime() + Hang.TIMEOUT.toNanos();
        while (value(name) != expected) {
            assertThat(System.nanoTime() - deadline).as("%s reached %s before the deadline", name, expected)
                    .isNegative();
            Thread.sleep(1);
        }
    }
}

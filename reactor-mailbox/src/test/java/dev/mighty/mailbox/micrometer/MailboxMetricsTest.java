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
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

@Timeout(value = 300, unit = TimeUnit.SECONDS)
class MailboxMetricsTest {
    private static final List<String> NAMES = List.of(
            "reactor.mailbox.capacity", "reactor.mailbox.size", "reactor.mailbox.high.water",
            "reactor.mailbox.reserved", "reactor.mailbox.admitted", "reactor.mailbox.received",
            "reactor.mailbox.refused", "reactor.mailbox.rejected", "reactor.mailbox.producers.parked",
            "reactor.mailbox.consumer.parked", "reactor.mailbox.producer.parks", "reactor.mailbox.consumer.parks");

    private final MeterRegistry registry = new SimpleMeterRegistry();

    @Test
    void shouldRegisterEveryMeterTaggedWithTheMailboxNameWhenBound() {
        final Mailbox<String> mb = Mailboxes.<String>builder().capacity(8).name("orders").build();

        assertThat(MailboxMetrics.monitor(registry, mb, "service", "billing")).isSameAs(mb);

        assertThat(registry.getMeters().stream().map(m -> m.getId().getName()).collect(Collectors.toList()))
                .containsExactlyInAnyOrderElementsOf(NAMES);
        for (Meter meter : registry.getMeters()) {
            assertThat(meter.getId().getTags()).as(meter.getId().getName())
                    .containsExactlyInAnyOrder(Tag.of("mailbox", "orders"), Tag.of("service", "billing"));
        }
        assertThat(registry.get("reactor.mailbox.admitted").functionCounter().getId().getBaseUnit())
                .isEqualTo("messages");
        assertThat(registry.get("reactor.mailbox.producers.parked").gauge().getId().getBaseUnit())
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
        assertThat(value("reactor.mailbox.refused")).isEqualTo(2.0);
        assertThat(value("reactor.mailbox.reserved")).isEqualTo(2.0);

        assertThat(ring.sendReserved("e")).isTrue();
        ring.releaseReserved(1);
        assertThat(mb.tryRecvMany(m -> { }, 10)).isEqualTo(3);
        assertMetersEqualStats(mb);
        assertThat(value("reactor.mailbox.received")).isEqualTo(3.0);
        assertThat(value("reactor.mailbox.high.water")).isEqualTo(3.0);

        mb.close();
        assertThatThrownBy(() -> mb.trySend("f")).isInstanceOf(MailboxClosedException.class);
        assertMetersEqualStats(mb);
        assertThat(value("reactor.mailbox.rejected")).isEqualTo(1.0);
        assertThat(value("reactor.mailbox.size")).isZero();
        assertThat(value("reactor.mailbox.capacity")).isEqualTo(4.0);
    }

    @Test
    void shouldEqualStatsWhenTheMailboxIsAFrameMailbox() {
        final FrameMailbox mb = Mailboxes.<MessageFrame>builder().capacity(2).name("frames").buildFrames();
        new MailboxMetrics(mb, Tags.of("kind", "frames")).bindTo(registry);

        assertThat(mb.trySend(MessageFrame.of(1, 1L))).isTrue();
        assertThat(mb.trySend(MessageFrame.of(1, 2L))).isTrue();
        assertThat(mb.trySend(MessageFrame.of(1, 3L))).isFalse();

        assertMetersEqualStats(mb);
        assertThat(value("reactor.mailbox.size")).isEqualTo(2.0);
        assertThat(value("reactor.mailbox.refused")).isEqualTo(1.0);
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
        awaitValue("reactor.mailbox.consumer.parked", 1.0);
        awaitValue("reactor.mailbox.consumer.parks", 1.0); // counted just before the park
        assertThat(mb.trySend("for the consumer")).isTrue();
        consumer.join(Hang.TIMEOUT.toMillis());
        assertThat(consumer.isAlive()).isFalse();
        assertThat(value("reactor.mailbox.consumer.parked")).isZero();

        assertThat(mb.trySend("fill")).isTrue();
        final Thread producer = new Thread(() -> {
            try {
                mb.send("parked");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        producer.start();
        awaitValue("reactor.mailbox.producers.parked", 1.0);
        assertThat(mb.tryRecv()).isEqualTo("fill");
        producer.join(Hang.TIMEOUT.toMillis());
        assertThat(producer.isAlive()).isFalse();
        assertThat(value("reactor.mailbox.producers.parked")).isZero();
        assertThat(value("reactor.mailbox.producer.parks")).as("cumulative").isGreaterThanOrEqualTo(1.0);
        assertThat(value("reactor.mailbox.consumer.parks")).as("cumulative").isGreaterThanOrEqualTo(1.0);
        assertMetersEqualStats(mb);
    }

    @Test
    void shouldUseThePrefixWhenGiven() {
        final Mailbox<String> mb = Mailboxes.<String>builder().name("prefixed").build();

        new MailboxMetrics(mb, "app", Tags.empty()).bindTo(registry);

        assertThat(registry.getMeters()).allSatisfy(m -> assertThat(m.getId().getName()).startsWith("app.mailbox."));
        assertThat(registry.get("app.mailbox.capacity").gauge().value()).isEqualTo(1024.0);
    }

    @Test
    void shouldLetTheCallersMailboxTagReplaceTheName() {
        final Mailbox<String> mb = Mailboxes.bounded(4); // default name "mailbox"

        new MailboxMetrics(mb, Tags.of("mailbox", "inbox-7")).bindTo(registry);

        assertThat(registry.get("reactor.mailbox.size").tag("mailbox", "inbox-7").gauge().value()).isZero();
    }

    @Test
    void shouldReportDemandFromTheAdapterWhenGiven() {
        final Mailbox<String> mb = Mailboxes.<String>builder().name("with-demand").build();
        final AtomicLong requested = new AtomicLong(42);

        new MailboxMetrics(mb).withDemand(requested, AtomicLong::get).bindTo(registry);

        assertThat(value("reactor.mailbox.demand")).isEqualTo(42.0);
        requested.set(Long.MAX_VALUE);
        assertThat(value("reactor.mailbox.demand")).isEqualTo((double) Long.MAX_VALUE);
        assertThat(registry.get("reactor.mailbox.demand").gauge().getId().getTag("mailbox")).isEqualTo("with-demand");
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
        assertThat(registry.get("reactor.mailbox.size").gauge().value()).isNaN();
        assertThat(registry.get("reactor.mailbox.admitted").functionCounter().count())
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
                .hasMessage("prefix: \"\" (expected: non-empty, e.g. \"reactor\")");
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
        assertThat(value("reactor.mailbox.size")).isEqualTo(1.0);
        assertThat(value("reactor.mailbox.admitted")).isEqualTo(1.0);
        return new WeakReference<>(mb);
    }

    private void assertMetersEqualStats(Mailbox<?> mb) {
        final MailboxStats stats = mb.stats();
        assertThat(value("reactor.mailbox.capacity")).isEqualTo(stats.capacity());
        assertThat(value("reactor.mailbox.size")).isEqualTo(stats.size());
        assertThat(value("reactor.mailbox.high.water")).isEqualTo(stats.highWaterMark());
        assertThat(value("reactor.mailbox.reserved")).isEqualTo(stats.reserved());
        assertThat(value("reactor.mailbox.admitted")).isEqualTo(stats.admitted());
        assertThat(value("reactor.mailbox.received")).isEqualTo(stats.received());
        assertThat(value("reactor.mailbox.refused")).isEqualTo(stats.refused());
        assertThat(value("reactor.mailbox.rejected")).isEqualTo(stats.rejectedClosed());
        assertThat(value("reactor.mailbox.producers.parked")).isEqualTo(stats.parkedProducers());
        assertThat(value("reactor.mailbox.consumer.parked")).isEqualTo(stats.consumerParked() ? 1.0 : 0.0);
        assertThat(value("reactor.mailbox.producer.parks")).isEqualTo(stats.producerParks());
        assertThat(value("reactor.mailbox.consumer.parks")).isEqualTo(stats.consumerParks());
    }

    /** The value of the only meter called {@code name}: a gauge's value or a function counter's count. */
    private double value(String name) {
        final Meter meter = registry.get(name).meter();
        return meter.measure().iterator().next().getValue();
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

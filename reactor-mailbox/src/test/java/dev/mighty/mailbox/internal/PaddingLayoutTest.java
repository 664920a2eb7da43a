package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.openjdk.jol.info.ClassLayout;
import org.openjdk.jol.info.FieldLayout;

/**
 * Proves the padding of the ring's field chain with JOL, on the concrete classes the JVM actually lays out:
 * the producer group ({@code producerIndex}, {@code producerLimit}), the signal group ({@code reserved},
 * {@code closeState}) and the consumer group ({@code consumerIndex}) are at least 128 bytes apart (two
 * cache lines, against the adjacent-line prefetcher), and the hot groups are 128 bytes from either end of the
 * object, away from whatever the heap puts next to it; the waiting protocol's fields ({@link RingWaiters}: the
 * parked consumer, read after every publish, and the room-waiter count, read after every receive batch) likewise
 * sit 128 bytes from either end of their own object.
 */
class PaddingLayoutTest {
    private static final int PAD = 128;

    static {
        // field offsets come from Unsafe-free reflection in JOL; skip its agent and SA attach attempts (seconds)
        System.setProperty("jol.skipHotspotSAAttach", "true");
        System.setProperty("jol.skipDynamicAttach", "true");
    }

    private static Map<String, Long> offsets(String className) throws ClassNotFoundException {
        final ClassLayout layout = ClassLayout.parseClass(Class.forName(className));
        final Map<String, Long> offsets = new HashMap<>();
        for (FieldLayout field : layout.fields()) {
            if (field.name().matches("b[0-7]{3}")) {
                continue; // the pads themselves; every pad class declares the same names
            }
            final Long previous = offsets.put(field.name(), field.offset());
            assertThat(previous).as("field %s declared twice in %s", field.name(), className).isNull();
        }
        offsets.put("<end>", layout.instanceSize());
        return offsets;
    }

    private static long distance(Map<String, Long> offsets, String a, String b) {
        assertThat(offsets).containsKeys(a, b);
        return Math.abs(offsets.get(a) - offsets.get(b));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"dev.mighty.mailbox.ArrayMailbox", "dev.mighty.mailbox.FrameRing"})
    void shouldKeepConsumerIndexTwoLinesFromProducerIndexWhenLaidOut(String className) throws Exception {
        final Map<String, Long> offsets = offsets(className);
        assertThat(distance(offsets, "consumerIndex", "producerIndex")).isGreaterThanOrEqualTo(PAD);
        assertThat(distance(offsets, "consumerIndex", "producerLimit")).isGreaterThanOrEqualTo(PAD);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"dev.mighty.mailbox.ArrayMailbox", "dev.mighty.mailbox.FrameRing"})
    void shouldKeepSignalFieldsTwoLinesFromBothIndicesWhenLaidOut(String className) throws Exception {
        final Map<String, Long> offsets = offsets(className);
        for (String signal : List.of("reserved", "closeState")) {
            for (String index : List.of("producerIndex", "producerLimit", "consumerIndex")) {
                assertThat(distance(offsets, signal, index)).as("%s to %s", signal, index)
                        .isGreaterThanOrEqualTo(PAD);
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"dev.mighty.mailbox.ArrayMailbox", "dev.mighty.mailbox.FrameRing"})
    void shouldKeepHotFieldsTwoLinesFromObjectEdgesWhenLaidOut(String className) throws Exception {
        final Map<String, Long> offsets = offsets(className);
        for (String hot : List.of("producerIndex", "producerLimit", "reserved", "consumerIndex")) {
            assertThat(offsets.get(hot)).as("%s from the object start", hot).isGreaterThanOrEqualTo(PAD);
            assertThat(offsets.get("<end>") - offsets.get(hot)).as("%s to the object end", hot)
                    .isGreaterThanOrEqualTo(PAD);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"dev.mighty.mailbox.internal.RingWaiters"})
    void shouldKeepTheWaitingFieldsTwoLinesFromObjectEdgesWhenLaidOut(String className) throws Exception {
        final Map<String, Long> offsets = offsets(className);
        for (String hot : List.of("consumerWaiter", "roomWaiting", "parkedProducers", "closeListeners")) {
            assertThat(offsets.get(hot)).as("%s from the object start", hot).isGreaterThanOrEqualTo(PAD);
            assertThat(offsets.get("<end>") - offsets.get(hot)).as("%s to the object end", hot)
                    .isGreaterThanOrEqualTo(PAD);
        }
    }
}

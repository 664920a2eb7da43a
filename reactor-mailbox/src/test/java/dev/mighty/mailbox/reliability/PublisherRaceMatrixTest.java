package dev.mighty.mailbox.reliability;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import dev.mighty.mailbox.SpecProbes;
import dev.mighty.mailbox.StressSeed;
import dev.mighty.mailbox.reliability.RaceRound.Event;
import dev.mighty.mailbox.rs.MailboxPublisher;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every pair of {request, cancel, send, close, closeExceptionally, subscribe} raced on two threads against a
 * {@link MailboxPublisher}, draining on the signalling threads (trampoline) and on an executor; each round is
 * checked by {@link RaceRound}. 21 pairs x 2 faces x {@value #ROUNDS} rounds in the default run; the
 * {@code stress} form runs {@value #STRESS_ROUNDS} rounds per case.
 */
@ExtendWith(SpecProbes.class)
class PublisherRaceMatrixTest {
    static final int ROUNDS = 150;
    static final int STRESS_ROUNDS = 5_000;

    private static final AtomicInteger THREADS = new AtomicInteger();
    /** Shared by every test class that uses {@link PublisherFace#EXECUTOR}; daemon threads, never shut down. */
    static final ExecutorService DRAIN_EXECUTOR = Executors.newFixedThreadPool(2, r -> {
        final Thread t = new Thread(r, "drain-executor-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    enum PublisherFace {
        TRAMPOLINE((mailbox, batch) -> new MailboxPublisher<>(mailbox, batch)),
        EXECUTOR((mailbox, batch) -> new MailboxPublisher<>(mailbox, batch, DRAIN_EXECUTOR));

        final RaceRound.Face face;

        PublisherFace(RaceRound.Face face) {
            this.face = face;
        }
    }

    static List<Arguments> pairs() {
        return pairs(PublisherFace.values());
    }

    static List<Arguments> pairs(Object[] faces) {
        final List<Arguments> pairs = new ArrayList<>();
        for (Object face : faces) {
            for (Event a : Event.values()) {
                for (Event b : Event.values()) {
                    if (a.ordinal() <= b.ordinal()) {
                        pairs.add(Arguments.of(face, a, b));
                    }
                }
            }
        }
        return pairs;
    }

    @ParameterizedTest(name = "{0}: {1} vs {2}")
    @MethodSource("pairs")
    void shouldKeepEveryInvariantWhenTwoSignalsRace(PublisherFace face, Event a, Event b) {
        rounds(face.face, a, b, ROUNDS, 31L * a.ordinal() + b.ordinal());
    }


    @Tag("stress")
    @ParameterizedTest(name = "{0}: {1} vs {2}")
    @MethodSource("pairs")
    void shouldKeepEveryInvariantWhenTwoSignalsRaceForLong(PublisherFace face, Event a, Event b) {
        rounds(face.face, a, b, STRESS_ROUNDS, StressSeed.of("publisher " + face + " " + a + " " + b));
    }

    static void rounds(RaceRound.Face face, Event a, Event b, int rounds, long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        try (Race race = new Race(2, RaceRound.TIMEOUT)) {
            for (int round = 0; round < rounds; round++) {
                try {
                    new RaceRound(face, random.split()).run(race, a, b);
                } catch (AssertionError e) {
                    throw new AssertionError("round " + round + " of " + a + " vs " + b + " (seed " + seed + ")", e);
                }
            }
        }
    }
}

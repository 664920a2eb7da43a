package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.SpecProbes;
import dev.mighty.mailbox.StressSeed;
import dev.mighty.mailbox.reactor.MailboxFlux;
import dev.mighty.mailbox.reliability.RaceRound.Event;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Hooks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The race matrix of {@link PublisherRaceMatrixTest} against {@link MailboxFlux}: unfused (batched
 * {@code onNext}), ASYNC-fused with a subscriber that polls itself and accounts for every poll, and fused through
 * Reactor's own {@code publishOn}, which may drop the one message it polled when a cancel from another thread
 * races that poll (documented on {@code MailboxFlux}; the round allows exactly that, and nothing else).
 */
@ExtendWith(SpecProbes.class)
class FluxRaceMatrixTest {
    private static final Scheduler WORKER = Schedulers.newSingle("publishOn-worker", true);
    /** Errors Reactor dropped other than the expected one (see {@link #expectOnlyRejectedSchedules()}). */
    private static final List<Throwable> UNEXPECTED_DROPS = new CopyOnWriteArrayList<>();

    enum FluxFace implements RaceRound.Face {
        UNFUSED {
            @Override
            public Publisher<Long> publisher(Mailbox<Long> mailbox, int batchSize) {
                return MailboxFlux.from(mailbox, batchSize);
            }
        },
        FUSED {
            @Override
            public Publisher<Long> publisher(Mailbox<Long> mailbox, int batchSize) {
                return MailboxFlux.from(mailbox, batchSize);
            }

            @Override
            public boolean fusedSubscribers() {
                return true;
            }
        },
        PUBLISH_ON {
            @Override
            public Publisher<Long> publisher(Mailbox<Long> mailbox, int batchSize) {
                return MailboxFlux.from(mailbox, batchSize).publishOn(WORKER, 1 + batchSize);
            }

            @Override
            public int lossPerCancel() {
                return 1;
            }
        }
    }

    static List<Arguments> pairs() {
        return PublisherRaceMatrixTest.pairs(FluxFace.values());
    }

    @ParameterizedTest(name = "{0}: {1} vs {2}")
    @MethodSource("pairs")
    void shouldKeepEveryInvariantWhenTwoSignalsRace(FluxFace face, Event a, Event b) {
        PublisherRaceMatrixTest.rounds(face, a, b, PublisherRaceMatrixTest.ROUNDS, 17L * a.ordinal() + b.ordinal());
    }

    @Tag("stress")
    @ParameterizedTest(name = "{0}: {1} vs {2}")
    @MethodSource("pairs")
    void shouldKeepEveryInvariantWhenTwoSignalsRaceForLong(FluxFace face, Event a, Event b) {
        PublisherRaceMatrixTest.rounds(face, a, b, PublisherRaceMatrixTest.STRESS_ROUNDS,
                StressSeed.of("flux " + face + " " + a + " " + b));
    }

    /**
     * A close racing a cancel may end the stream while the cancelled {@code publishOn} has disposed its worker;
     * {@code publishOn} then drops the {@code onComplete}/{@code onError} it cannot schedule ("Scheduler
     * unavailable"). That one is expected and silenced; any other dropped error fails the class.
     */
    @BeforeAll
    static void expectOnlyRejectedSchedules() {
        Hooks.onErrorDropped(e -> {
            if (!(e instanceof RejectedExecutionException)) {
                UNEXPECTED_DROPS.add(e);
            }
        });
    }

    @AfterAll
    static void shutdown() {
        Hooks.resetOnErrorDropped();
        WORKER.dispose();
        assertThat(UNEXPECTED_DROPS).as("errors dropped by Reactor").isEmpty();
    }
}

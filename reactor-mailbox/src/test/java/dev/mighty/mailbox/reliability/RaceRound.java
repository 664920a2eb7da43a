package dev.mighty.mailbox.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.internal.MailboxRing;
import org.reactivestreams.Publisher;

/**
 * One round of a pairwise race against a receive-side face of a mailbox (a {@code MailboxPublisher}, a
 * {@code MailboxFlux}, ...): a mailbox with a few messages, a first subscriber {@code A} with some demand, then
 * two {@link Event}s run at the same moment on two threads, then a finishing phase that closes the mailbox and
 * gives every live subscriber unbounded demand, and the checks:
 * <ol>
 *     <li>every admitted message was delivered exactly once or is still in the mailbox, and the deliveries of
 *     all subscribers (in delivery order) followed by what is left are in per-producer order;</li>
 *     <li>no subscriber saw a spec break ({@link StressSubscriber}): no concurrent {@code onNext}, none beyond
 *     demand, nothing after a terminal signal, and never two subscribers in {@code onNext} at once;</li>
 *     <li>every subscriber that was accepted and not cancelled ended, with {@code onComplete} if the first close
 *     was normal and {@code onError(cause)} if it was exceptional; a refused one got {@code onSubscribe} then
 *     {@code onError(IllegalStateException)} and nothing else;</li>
 *     <li>the consumer role was given back, the mailbox ends terminated, and its counters agree.</li>
 * </ol>
 */
final class RaceRound {
    static final Duration TIMEOUT = Hang.TIMEOUT;

    enum Event { REQUEST, CANCEL, SEND, CLOSE, CLOSE_EXCEPTIONALLY, SUBSCRIBE }

    /** Makes the receive-side face under test. */
    @FunctionalInterface
    interface Face {
        Publisher<Long> publisher(Mailbox<Long> mailbox, int batchSize);

        /** Whether the test subscribers ask for ASYNC fusion and poll themselves. */
        default boolean fusedSubscribers() {
            return false;
        }

        /**
         * Messages a cancel from another thread may cost: 0 for our own faces; 1 for a Reactor operator that
         * drops the message it polled when it sees the cancel ({@code publishOn}: documented on MailboxFlux).
         */
        default int lossPerCancel() {
            return 0;
        }
    }

    private static final int PRODUCERS = 3; // 0: the preload; 1 and 2: the two racing sides

    private final Mailbox<Long> mailbox;
    private final Publisher<Long> publisher;
    private final StressSubscriber.Lane lane = new StressSubscriber.Lane();
    private final List<StressSubscriber<Long>> subscribers = new ArrayList<>();
    private final StressSubscriber<Long> first;
    private final long[] sent = new long[PRODUCERS];
    private final RuntimeException cause = new RuntimeException("closed exceptionally by the race");
    private final SplittableRandom random;
    private final Face face;
    private int lossBudget;

    RaceRound(Face face, SplittableRandom random) {
        this.face = face;
        this.random = random;
        this.mailbox = Mailboxes.bounded(1 << random.nextInt(4));
        final int preload = random.nextInt(mailbox.capacity() + 1);
        for (int i = 0; i < preload; i++) {
            mailbox.trySend(SequenceChecker.message(0, i));
        }
        sent[0] = preload;
        this.publisher = face.publisher(mailbox, 1 + random.nextInt(4));
        this.first = subscribe("A", random.nextInt(4));
        assertThat(first.isFused()).as("fusion granted to a subscriber that asks").isEqualTo(face.fusedSubscribers());
    }

    /** Runs one round of {@code a} racing {@code b} on {@code race} and checks it. */
    void run(Race race, Event a, Event b) {
        final Runnable left = action(a, 1, random.nextLong());
        final Runnable right = action(b, 2, random.nextLong());
        lossBudget = a == Event.CANCEL || b == Event.CANCEL ? face.lossPerCancel() : 0;
        race.run(left, right);
        finish();
    }

    private Runnable action(Event event, int side, long seed) {
        switch (event) {
            case REQUEST:
                final long n = 1 + new SplittableRandom(seed).nextInt(8);
                return () -> first.request(n);
            case CANCEL:
                return first::cancel;
            case SEND:
                final int count = 1 + new SplittableRandom(seed).nextInt(8);
                return () -> send(side, count);
            case CLOSE:
                return mailbox::close;
            case CLOSE_EXCEPTIONALLY:
                return () -> mailbox.closeExceptionally(cause);
            case SUBSCRIBE:
            default:
                final StressSubscriber<Long> next = new StressSubscriber<>("B" + side, lane,
                        new SplittableRandom(seed).nextInt(4), face.fusedSubscribers());
                subscribers.add(next); // here, on the test thread; subscribed in the race
                return () -> publisher.subscribe(next);
        }
    }

    private StressSubscriber<Long> subscribe(String name, long initialRequest) {
        final StressSubscriber<Long> s = new StressSubscriber<>(name, lane, initialRequest, face.fusedSubscribers());
        subscribers.add(s);
        publisher.subscribe(s);
        return s;
    }

    /** Sends 0 .. count-1 for {@code producer}, giving up (keeping the sequence contiguous) when full or closed. */
    private void send(int producer, int count) {
        try {
            for (int seq = 0; seq < count; seq++) {
                int attempts = 0;
                while (!mailbox.trySend(SequenceChecker.message(producer, seq))) {
                    if (++attempts == 50) {
                        return;
                    }
                    Thread.yield();
                }
                sent[producer] = seq + 1;
            }
        } catch (MailboxClosedException closed) {
            // the sequence ends here
        }
    }

    private void finish() {
        if (!mailbox.isClosed()) {
            mailbox.close();
        }
        final boolean exceptional = mailbox.closeCause() != null;
        for (StressSubscriber<Long> s : subscribers) {
            if (s.isSubscribed() && !s.isCancelled() && !s.isTerminated()) {
                s.request(Long.MAX_VALUE);
            }
        }
        for (StressSubscriber<Long> s : subscribers) {
            assertThat(s.isSubscribed()).as("%s got onSubscribe", s).isTrue();
            if (!s.isCancelled()) {
                assertThat(s.awaitTerminal(TIMEOUT)).as("%s ended after close and unbounded demand", s).isTrue();
            }
            if (s.error != null && s.error != cause) {
                assertThat(s.error).as("%s: the only other error is a refusal", s)
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("live subscriber");
                assertThat(s.values).as("%s refused: took nothing", s).isEmpty();
            } else if (s.error == cause) {
                assertThat(exceptional).as("%s got the cause: the first close was exceptional", s).isTrue();
            } else if (s.completed) {
                assertThat(exceptional).as("%s completed: the first close was normal", s).isFalse();
            }
            assertThat(s.violations).as("%s spec violations", s).isEmpty();
        }
        assertThat(lane.violations).isEmpty();
        final MailboxRing<Long> ring = MailboxRing.of(mailbox);
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (ring.consumerRole() != null) { // an executor may still be running the last pass
            assertThat(System.nanoTime() - deadline).as("the consumer role is given back").isNegative();
            LockSupport.parkNanos(50_000L);
        }
        final SequenceChecker checker = new SequenceChecker(PRODUCERS);
        for (Object delivered : lane.log) {
            checker.accept((Long) delivered);
        }
        final List<Long> left = new ArrayList<>();
        mailbox.tryRecvMany(left::add, Integer.MAX_VALUE);
        left.forEach(checker::accept);
        final long total = sent[0] + sent[1] + sent[2];
        if (lossBudget == 0) {
            checker.assertExactlyOnceInOrder(sent);
        } else {
            assertThat(checker.violations()).as("duplicates").noneMatch(v -> v.startsWith("duplicate"));
            assertThat(total - checker.received()).as("messages lost to a cancel").isBetween(0L, (long) lossBudget);
        }
        assertThat(mailbox.isTerminated()).isTrue();
        final MailboxStats stats = mailbox.stats();
        assertThat(stats.admitted()).isEqualTo(total);
        assertThat(stats.received()).isEqualTo(total);
    }
}

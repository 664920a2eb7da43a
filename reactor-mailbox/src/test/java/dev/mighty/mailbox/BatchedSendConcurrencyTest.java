package dev.mighty.mailbox;

import static dev.mighty.mailbox.MailboxVariant.id;
import static dev.mighty.mailbox.MailboxVariant.producerOf;
import static dev.mighty.mailbox.MailboxVariant.seqOf;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import dev.mighty.mailbox.internal.MailboxRing;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Batched sends on real threads: many producers sending runs (every batched form, mixed with single sends and
 * reserved sends) to one consumer, and {@code close()} racing batched sends. What must hold under every
 * interleaving, checked per message against a ledger the producers keep of what each call reported:
 * <ul>
 *     <li>every message a call reported admitted is received exactly once, in per-producer order, and no other
 *     (a run refused by the close, or the part of a run a call handed back, is never received);</li>
 *     <li>the messages one {@code trySendMany} call admitted are contiguous in the consumer's order: no other
 *     producer's message falls inside a run claimed with one CAS;</li>
 *     <li>the counters agree with the ledger.</li>
 * </ul>
 * The default run keeps each case to a fraction of a second on 2 cores; the {@code stress} tag runs 20-50x more.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class BatchedSendConcurrencyTest {
    private static final Duration RUN_WAIT = Duration.ofSeconds(60);
    /** The longest run a producer sends. */
    private static final int MAX_RUN = 40;

    static Stream<Arguments> cases() {
        return Stream.of(MailboxVariant.values()).flatMap(v -> Stream.of(4, 64).map(c -> Arguments.of(v, c)));
    }

    static Stream<MailboxVariant> variants() {
        return Stream.of(MailboxVariant.values());
    }

    // ------------------------------------------------------------------ exactly once, in order, runs contiguous

    @ParameterizedTest(name = "{0} capacity {1}")
    @MethodSource("cases")
    void shouldDeliverRunsExactlyOnceInOrderAndContiguousWhenProducersSendRuns(MailboxVariant v, int capacity)
            throws Exception {
        runProducers(v, capacity, 10_000, 42L);
    }

    @Tag("stress")
    @ParameterizedTest(name = "{0} capacity {1}")
    @MethodSource("cases")
    void shouldDeliverRunsExactlyOnceInOrderAndContiguousWhenProducersSendMillions(MailboxVariant v, int capacity)
            throws Exception {
        runProducers(v, capacity, 1_000_000, System.nanoTime());
    }

    /**
     * Each producer sends {@code perProducer} messages in runs of 1 .. {@value #MAX_RUN} through a random batched
     * form (or single sends, or reserved sends for producer 0 of a many-producer mailbox, or a {@link FrameBatch} on
     * a frame mailbox), marking in its ledger which messages a single {@code trySendMany} claim joined to the one
     * before. The consumer records the order in which everything arrived.
     */
    private static void runProducers(MailboxVariant v, int capacity, int perProducer, long seed) throws Exception {
        final Mailbox<Object> mb = v.create(capacity);
        final MailboxRing<Object> ring = MailboxRing.of(mb);
        final int producers = v.multiProducer() ? 3 : 1;
        final long total = (long) producers * perProducer;
        final long[] order = new long[(int) total];

        final Forked<Integer> consumer = Forked.start("consumer", () -> {
            final int[] n = {0};
            final SplittableRandom random = new SplittableRandom(seed);
            while (mb.recvMany(m -> order[n[0]++] = v.id(m), 1 + random.nextInt(50)) > 0) {
                // until end of stream
            }
            return n[0];
        });
        final List<Forked<boolean[]>> senders = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final int producer = p;
            senders.add(Forked.start("producer-" + p, () -> {
                final SplittableRandom random = new SplittableRandom(seed + 1 + producer);
                final boolean[] joined = new boolean[perProducer]; // joined[s]: claimed with s - 1 in one CAS
                final Object[] batch = newArray(v, MAX_RUN);
                final List<Object> list = new ArrayList<>(MAX_RUN);
                final FrameBatch frameBatch = new FrameBatch(MAX_RUN);
                final FrameMailbox fm = v == MailboxVariant.FRAMES ? (FrameMailbox) (Mailbox<?>) mb : null;
                int seq = 0;
                while (seq < perProducer) {
                    final int n = Math.min(perProducer - seq, 1 + random.nextInt(MAX_RUN));
                    final int offset = random.nextInt(MAX_RUN - n + 1);
                    list.clear();
                    for (int i = 0; i < offset; i++) {
                        list.add(Boolean.FALSE); // never sent: outside the range
                    }
                    for (int i = 0; i < n; i++) {
                        batch[offset + i] = v.message(id(producer, seq + i));
                        list.add(batch[offset + i]);
                    }
                    // forms 0-4 on every variant; 5: reserved sends (producer 0 of a many-producer mailbox);
                    // 6, 7: a FrameBatch (frame mailboxes), by trySendMany and by sendMany
                    final int forms = producer == 0 && producers > 1 ? 6 : 5;
                    int form = random.nextInt(fm != null ? forms + 2 : forms);
                    if (form >= forms) {
                        form = 6 + form - forms;
                    }
                    if (form >= 6) {
                        frameBatch.clear();
                        for (int i = 0; i < offset + n; i++) {
                            final MessageFrame f = (MessageFrame) (i < offset ? batch[offset] : batch[i]);
                            frameBatch.add(f.kind(), f.correlationId(), f.payload());
                        }
                    }
                    switch (form) {
                        case 0, 1, 6 -> { // trySendMany, array, list or FrameBatch: what fits, then the rest
                            for (int sent = 0; sent < n; ) {
                                final int k = switch (form) {
                                    case 0 -> mb.trySendMany(batch, offset + sent, offset + n);
                                    case 1 -> mb.trySendMany(list, offset + sent, offset + n);
                                    default -> fm.trySendMany(frameBatch, offset + sent, offset + n);
                                };
                                if (k < 0 || k > n - sent) {
                                    throw new AssertionError("trySendMany (form " + form + ") returned " + k
                                            + " for " + (n - sent));
                                }
                                for (int i = 1; i < k; i++) {
                                    joined[seq + sent + i] = true;
                                }
                                sent += k;
                                if (k == 0) {
                                    Thread.yield();
                                }
                            }
                        }
                        case 2 -> expectAll(mb.sendMany(list, offset, offset + n), n);
                        case 3 -> {
                            for (int sent = 0; sent < n; ) {
                                sent += mb.sendMany(batch, offset + sent, offset + n, Duration.ofNanos(
                                        random.nextInt(100_000)));
                            }
                        }
                        case 4 -> {
                            for (int i = 0; i < n; i++) {
                                mb.send(batch[offset + i]);
                            }
                        }
                        case 7 -> expectAll(fm.sendMany(frameBatch, offset, offset + n), n);
                        default -> { // reserved sends interleave with the others' runs
                            for (int i = 0; i < n; ) {
                                final int granted = ring.reserve(n - i);
                                for (int g = 0; g < granted; g++) {
                                    if (!ring.sendReserved(batch[offset + i++])) {
                                        throw new AssertionError("sendReserved refused on an open mailbox");
                                    }
                                }
                                if (granted == 0) {
                                    Thread.yield();
                                }
                            }
                        }
                    }
                    seq += n;
                }
                return joined;
            }));
        }
        final List<boolean[]> ledgers = new ArrayList<>();
        for (Forked<boolean[]> sender : senders) {
            ledgers.add(sender.join(RUN_WAIT));
        }
        mb.close();
        assertThat(consumer.join(RUN_WAIT)).as("received").isEqualTo((int) total);

        final long[] next = new long[producers];
        long joinedRuns = 0;
        for (int i = 0; i < order.length; i++) {
            final int producer = producerOf(order[i]);
            final long seq = seqOf(order[i]);
            assertThat(seq).as("producer %d: exactly once, in order (at %d)", producer, i).isEqualTo(next[producer]);
            next[producer]++;
            if (ledgers.get(producer)[(int) seq]) {
                joinedRuns++;
                assertThat(order[i - 1]).as("message %d of producer %d was claimed with the one before it: "
                        + "nothing may fall between them", seq, producer).isEqualTo(id(producer, seq - 1));
            }
        }
        assertThat(joinedRuns).as("runs longer than one message were claimed").isPositive();
        final MailboxStats stats = mb.stats();
        assertThat(stats.admitted()).isEqualTo(total);
        assertThat(stats.received()).isEqualTo(total);
        assertThat(stats.reserved()).isZero();
        assertThat(stats.parkedProducers()).isZero();
        assertThat(mb.isTerminated()).isTrue();
    }

    /** An array of the variant's message type: a frame mailbox's array methods take a {@code MessageFrame[]}. */
    private static Object[] newArray(MailboxVariant v, int n) {
        return v == MailboxVariant.FRAMES ? new MessageFrame[n] : new Object[n];
    }

    private static void expectAll(int sent, int n) {
        if (sent != n) {
            throw new AssertionError("sendMany on an open mailbox returned " + sent + " of " + n);
        }
    }

    // ------------------------------------------------------------------ close racing batched sends

    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReceiveExactlyTheAdmittedRunsWhenCloseRacesBatchedSends(MailboxVariant v) throws Exception {
        runCloseRace(v, 400, 77L);
    }

    @Tag("stress")
    @ParameterizedTest(name = "{0}")
    @MethodSource("variants")
    void shouldReceiveExactlyTheAdmittedRunsWhenCloseRacesBatchedSendsManyRounds(MailboxVariant v)
            throws Exception {
        runCloseRace(v, 20_000, System.nanoTime());
    }

    /**
     * Per round: producers send runs of 1 .. 12 (capacity 4 or 8, so runs are cut short and wait) with a random
     * batched form until the close rejects them, recording in a per-message ledger what each call reported
     * admitted; a closer closes after a random spin; the consumer receives until end of stream, counting each
     * message. Every message must have been received exactly as often as the ledger says (1 or 0): a run
     * refused by the close is refused whole, and what a call handed back never arrives.
     */
    private static void runCloseRace(MailboxVariant v, int rounds, long seed) throws Exception {
        final int producers = v.multiProducer() ? 3 : 1;
        final SplittableRandom random = new SplittableRandom(seed);
        final int perProducer = 400;
        long admittedTotal = 0;
        long refusedRuns = 0;
        for (int round = 0; round < rounds; round++) {
            final Mailbox<Object> mb = v.create(4 << random.nextInt(2));
            final CyclicBarrier start = new CyclicBarrier(producers + 1);
            final int closeAfterSpins = random.nextInt(3_000);
            final long roundSeed = random.nextLong();

            final Forked<byte[][]> consumer = Forked.start("consumer", () -> {
                final byte[][] received = new byte[producers][perProducer];
                final long[] next = new long[producers];
                while (mb.recvMany(m -> {
                    final long id = v.id(m);
                    final int p = producerOf(id);
                    final int s = (int) seqOf(id);
                    if (s != next[p]) {
                        throw new AssertionError("producer " + p + ": expected seq " + next[p] + ", received " + s);
                    }
                    next[p]++;
                    received[p][s]++;
                }, 1 + (int) (roundSeed & 7)) > 0) {
                    // until end of stream
                }
                return received;
            });
            final List<Forked<boolean[]>> senders = new ArrayList<>();
            for (int p = 0; p < producers; p++) {
                final int producer = p;
                senders.add(Forked.start("producer-" + p, () -> {
                    final SplittableRandom r = new SplittableRandom(roundSeed + producer);
                    final boolean[] admitted = new boolean[perProducer]; // the ledger: what calls reported
                    final Object[] batch = newArray(v, 12);
                    final FrameBatch frameBatch = new FrameBatch(12);
                    final FrameMailbox fm = v == MailboxVariant.FRAMES ? (FrameMailbox) (Mailbox<?>) mb : null;
                    start.await();
                    int seq = 0;
                    try {
                        while (seq < perProducer) {
                            final int n = Math.min(perProducer - seq, 1 + r.nextInt(12));
                            for (int i = 0; i < n; i++) {
                                batch[i] = v.message(id(producer, seq + i));
                            }
                            final int form = r.nextInt(fm != null ? 6 : 4);
                            if (form >= 4) {
                                frameBatch.clear();
                                for (int i = 0; i < n; i++) {
                                    final MessageFrame f = (MessageFrame) batch[i];
                                    frameBatch.add(f.kind(), f.correlationId(), f.payload());
                                }
                            }
                            final int k = switch (form) {
                                case 0 -> mb.trySendMany(batch, 0, n);
                                case 1 -> mb.trySendMany(Arrays.asList(batch).subList(0, n), 0, n);
                                case 2 -> mb.sendMany(batch, 0, n);
                                case 3 -> mb.sendMany(batch, 0, n, Duration.ofNanos(r.nextInt(50_000)));
                                case 4 -> fm.trySendMany(frameBatch, 0, n);
                                default -> fm.sendMany(frameBatch, 0, n, Duration.ofNanos(r.nextInt(50_000)));
                            };
                            for (int i = 0; i < k; i++) {
                                admitted[seq + i] = true;
                            }
                            seq += k;
                            if (k == 0) {
                                Thread.yield();
                            }
                        }
                    } catch (MailboxClosedException e) {
                        // the run starting at seq was refused whole; the producer stops
                    }
                    return admitted;
                }));
            }
            final Forked<Void> closer = Forked.start("closer", () -> {
                start.await();
                for (int i = 0; i < closeAfterSpins; i++) {
                    Thread.onSpinWait();
                }
                mb.close();
                return null;
            });

            closer.join();
            final byte[][] received = consumer.join(RUN_WAIT);
            long admittedRound = 0;
            for (int p = 0; p < producers; p++) {
                final boolean[] admitted = senders.get(p).join(RUN_WAIT);
                for (int s = 0; s < perProducer; s++) {
                    if (received[p][s] != (admitted[s] ? 1 : 0)) {
                        throw new AssertionError("round " + round + ", producer " + p + ", message " + s
                                + ": admitted=" + admitted[s] + " but received " + received[p][s] + " times");
                    }
                    admittedRound += admitted[s] ? 1 : 0;
                }
                refusedRuns += admitted[perProducer - 1] ? 0 : 1;
            }
            final MailboxStats stats = mb.stats();
            assertThat(stats.admitted()).as("round %d: admitted counter vs ledger", round).isEqualTo(admittedRound);
            assertThat(stats.parkedProducers()).isZero();
            assertThat(mb.isTerminated()).isTrue();
            admittedTotal += admittedRound;
        }
        // the race was real: some rounds closed with runs under way, and runs went through
        assertThat(refusedRuns).isPositive();
        assertThat(admittedTotal).isPositive();
    }
}

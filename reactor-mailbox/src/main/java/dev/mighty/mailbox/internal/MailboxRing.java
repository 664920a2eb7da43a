package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.MailboxStats;
import dev.mighty.mailbox.SendResult;
import dev.mighty.mailbox.WaitPolicy;

/*
 * The padded field chain, ordered by which thread writes (JCTools MpscArrayQueue, Agrona
 * AbstractConcurrentArrayQueue):
 *
 *   RingL0Pad -> RingColdFields (final config) -> RingL1Pad
 *   -> RingProducerFields (producerIndex, producerLimit: written by every producer) -> RingL2Pad
 *   -> RingSignalFields (reserved, waiters, close state: read on every send, written rarely) -> RingL3Pad
 *   -> RingConsumerFields (consumerIndex and the consumer's private state) -> RingL4Pad
 *   -> RingCounterFields (failure-path counters) -> RingL5Pad -> MailboxRing
 *
 * Each pad is 128 bytes (two cache lines, against the adjacent-line prefetcher). @Contended is not
 * used: it needs -XX:-RestrictContended outside the JDK.
 */

@SuppressWarnings("unused")
abstract class RingL0Pad {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b
}

abstract class RingColdFields extends RingL0Pad {
    /** {@code capacity - 1}; the capacity is a power of two. */
    protected final long mask;
    protected final int capacity;
    protected final boolean singleProducer;
    protected final String name;

    RingColdFields(int capacity, boolean singleProducer, String name) {
        this.capacity = capacity;
        this.mask = capacity - 1L;
        this.singleProducer = singleProducer;
        this.name = name;
    }
}

@SuppressWarnings("unused")
abstract class RingL1Pad extends RingColdFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b

    RingL1Pad(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }
}

abstract class RingProducerFields extends RingL1Pad {
    /**
     * The producer word: {@code index << INDEX_SHIFT | epoch << 1 | closed}. Written by producers (CAS to
     * claim a slot), by {@code close} (CAS to set the closed bit) and by {@code reserve} (CAS to bump the
     * reservation epoch). Every claim CAS validates, in one step, that the mailbox is open and that no
     * reservation was granted since the claimant read {@code reserved}.
     */
    protected volatile long producerIndex;
    static final VarHandle PRODUCER_INDEX;
    /** A cached {@code consumerIndex + capacity}: below it, producers need not read the consumer's line. */
    protected volatile long producerLimit;
    static final VarHandle PRODUCER_LIMIT;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            PRODUCER_INDEX = lookup.findVarHandle(RingProducerFields.class, "producerIndex", long.class);
            PRODUCER_LIMIT = lookup.findVarHandle(RingProducerFields.class, "producerLimit", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    RingProducerFields(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
        PRODUCER_LIMIT.setRelease(this, (long) capacity);
    }

    protected final long lvProducerIndex() {
        return (long) PRODUCER_INDEX.getVolatile(this);
    }

    protected final boolean casProducerIndex(long expect, long update) {
        return PRODUCER_INDEX.compareAndSet(this, expect, update);
    }

    protected final long lvProducerLimit() {
        return (long) PRODUCER_LIMIT.getVolatile(this);
    }

    protected final void soProducerLimit(long limit) {
        PRODUCER_LIMIT.setRelease(this, limit);
    }
}

@SuppressWarnings("unused")
abstract class RingL2Pad extends RingProducerFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b

    RingL2Pad(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }
}

abstract class RingSignalFields extends RingL2Pad {
    /** Slots reserved and not yet used. Read by every send; written by reserve/release and reserved sends. */
    protected volatile long reserved;
    static final VarHandle RESERVED;
    /** The parked consumer: a {@link Thread} or a {@link Wakeable}; null when nobody waits for data. */
    protected volatile Object consumerWaiter;
    static final VarHandle CONSUMER_WAITER;
    /** Stack of producers waiting for room (threads or wakeables); drained whole by each wake-up. */
    protected volatile WaiterNode producerWaiters;
    static final VarHandle PRODUCER_WAITERS;
    /** Stack of wakeables to call once, on close. */
    protected volatile WaiterNode closeListeners;
    static final VarHandle CLOSE_LISTENERS;
    /** The subscription that holds the consumer role, or null (see attachConsumer). */
    protected volatile ConsumerRole consumerRole;
    static final VarHandle CONSUMER_ROLE;
    /** A subscription accepted while the cancelled holder finishes its last delivery, or null. */
    protected volatile ConsumerRole nextConsumerRole;
    static final VarHandle NEXT_CONSUMER_ROLE;
    /** null while open; {@link MailboxRing#NORMAL_CLOSE} or the cause once closing has been decided. */
    protected volatile Object closeState;
    static final VarHandle CLOSE_STATE;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            RESERVED = lookup.findVarHandle(RingSignalFields.class, "reserved", long.class);
            CONSUMER_WAITER = lookup.findVarHandle(RingSignalFields.class, "consumerWaiter", Object.class);
            PRODUCER_WAITERS = lookup.findVarHandle(RingSignalFields.class, "producerWaiters", WaiterNode.class);
            CLOSE_LISTENERS = lookup.findVarHandle(RingSignalFields.class, "closeListeners", WaiterNode.class);
            CLOSE_STATE = lookup.findVarHandle(RingSignalFields.class, "closeState", Object.class);
            CONSUMER_ROLE = lookup.findVarHandle(RingSignalFields.class, "consumerRole", ConsumerRole.class);
            NEXT_CONSUMER_ROLE = lookup.findVarHandle(RingSignalFields.class, "nextConsumerRole", ConsumerRole.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    RingSignalFields(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }

    protected final long lvReserved() {
        return (long) RESERVED.getVolatile(this);
    }

    protected final boolean casReserved(long expect, long update) {
        return RESERVED.compareAndSet(this, expect, update);
    }

    protected final Object lvConsumerWaiter() {
        return CONSUMER_WAITER.getVolatile(this);
    }

    protected final void svConsumerWaiter(Object waiter) {
        CONSUMER_WAITER.setVolatile(this, waiter);
    }

    protected final boolean casConsumerWaiter(Object expect, Object update) {
        return CONSUMER_WAITER.compareAndSet(this, expect, update);
    }

    protected final WaiterNode lvProducerWaiters() {
        return (WaiterNode) PRODUCER_WAITERS.getVolatile(this);
    }
}

@SuppressWarnings("unused")
abstract class RingL3Pad extends RingSignalFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b

    RingL3Pad(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }
}

abstract class RingConsumerFields extends RingL3Pad {
    /** Written by the consumer only (release); read by producers refreshing {@code producerLimit}. */
    protected volatile long consumerIndex;
    static final VarHandle CONSUMER_INDEX;
    /**
     * The thread inside a batched receive ({@code tryRecvMany}, {@code recvMany}, a publisher drain), or
     * null. Consumer-written, plain; read only by a producer about to park, which compares it with itself:
     * a thread always sees its own writes, so the self-check is exact.
     */
    protected Thread consumerThread;
    /**
     * How {@code recv}/{@code recvMany} wait on an empty mailbox before they park. Set once by the builder before
     * the mailbox is shared (volatile, so an unsafe publication still shows it); read by the consumer only on
     * its way to a park, never per message.
     */
    protected volatile WaitPolicy waitPolicy = WaitPolicy.defaults();

    static {
        try {
            CONSUMER_INDEX = MethodHandles.lookup().findVarHandle(RingConsumerFields.class, "consumerIndex", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    RingConsumerFields(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }

    protected final long lvConsumerIndex() {
        return (long) CONSUMER_INDEX.getVolatile(this);
    }

    protected final long lpConsumerIndex() {
        return (long) CONSUMER_INDEX.get(this);
    }

    protected final void soConsumerIndex(long index) {
        CONSUMER_INDEX.setRelease(this, index);
    }
}

@SuppressWarnings("unused")
abstract class RingL4Pad extends RingConsumerFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b

    RingL4Pad(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }
}

abstract class RingCounterFields extends RingL4Pad {
    /** Failure-path counters: touched only when a send is refused, rejected or parks. */
    protected volatile long refused;
    static final VarHandle REFUSED;
    protected volatile long rejectedClosed;
    static final VarHandle REJECTED_CLOSED;
    protected volatile int parkedProducers;
    static final VarHandle PARKED_PRODUCERS;
    /** Times a producer parked on a full mailbox, or a subscriber side registered to wait for room. Cumulative. */
    protected volatile long producerParks;
    static final VarHandle PRODUCER_PARKS;
    /**
     * Times the consumer parked on an empty mailbox, or a drain registered to be woken for data. Cumulative.
     * Single writer, the consumer (role hand-overs order one holder's writes before the next one's), so a
     * plain increment published with an opaque store; under the misuse of two consumers at once an increment
     * may be lost, which skews only this figure.
     */
    protected volatile long consumerParks;
    static final VarHandle CONSUMER_PARKS;
    /**
     * The highest occupancy seen: sampled by producers when they refresh producerLimit (at least once per
     * capacity claims, and on every claim near full) and by the consumer from its batch sizes. CAS-max, and
     * only when exceeded, so it is written a handful of times per run.
     */
    protected volatile int highWaterMark;
    static final VarHandle HIGH_WATER_MARK;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            REFUSED = lookup.findVarHandle(RingCounterFields.class, "refused", long.class);
            REJECTED_CLOSED = lookup.findVarHandle(RingCounterFields.class, "rejectedClosed", long.class);
            PARKED_PRODUCERS = lookup.findVarHandle(RingCounterFields.class, "parkedProducers", int.class);
            PRODUCER_PARKS = lookup.findVarHandle(RingCounterFields.class, "producerParks", long.class);
            CONSUMER_PARKS = lookup.findVarHandle(RingCounterFields.class, "consumerParks", long.class);
            HIGH_WATER_MARK = lookup.findVarHandle(RingCounterFields.class, "highWaterMark", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    RingCounterFields(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }

    /** Counts a consumer park or wake-up registration. Consumer only. */
    protected final void countConsumerPark() {
        CONSUMER_PARKS.setOpaque(this, (long) CONSUMER_PARKS.getOpaque(this) + 1L);
    }

    /** Raises the high-water mark to {@code occupancy} (clamped to the capacity) if it is higher. */
    protected final void sampleOccupancy(long occupancy) {
        final int sample = (int) Math.min(occupancy, capacity);
        int current;
        while (sample > (current = highWaterMark) && !HIGH_WATER_MARK.compareAndSet(this, current, sample)) {
            // retry: another sampler raised it concurrently
        }
    }
}

@SuppressWarnings("unused")
abstract class RingL5Pad extends RingCounterFields {
    byte b000, b001, b002, b003, b004, b005, b006, b007; // 8b
    byte b010, b011, b012, b013, b014, b015, b016, b017; // 16b
    byte b020, b021, b022, b023, b024, b025, b026, b027; // 24b
    byte b030, b031, b032, b033, b034, b035, b036, b037; // 32b
    byte b040, b041, b042, b043, b044, b045, b046, b047; // 40b
    byte b050, b051, b052, b053, b054, b055, b056, b057; // 48b
    byte b060, b061, b062, b063, b064, b065, b066, b067; // 56b
    byte b070, b071, b072, b073, b074, b075, b076, b077; // 64b
    byte b100, b101, b102, b103, b104, b105, b106, b107; // 72b
    byte b110, b111, b112, b113, b114, b115, b116, b117; // 80b
    byte b120, b121, b122, b123, b124, b125, b126, b127; // 88b
    byte b130, b131, b132, b133, b134, b135, b136, b137; // 96b
    byte b140, b141, b142, b143, b144, b145, b146, b147; // 104b
    byte b150, b151, b152, b153, b154, b155, b156, b157; // 112b
    byte b160, b161, b162, b163, b164, b165, b166, b167; // 120b
    byte b170, b171, b172, b173, b174, b175, b176, b177; // 128b

    RingL5Pad(int capacity, boolean singleProducer, String name) {
        super(capacity, singleProducer, name);
    }
}

/**
 * The bounded ring behind every {@link Mailbox}: slot claiming, reservations, close, and the wait logic.
 * Subclasses supply the slot storage ({@link #publish}, {@link #poll}, {@link #isPublished}).
 *
 * <p>The claiming algorithm is the JCTools {@code MpscArrayQueue} one (CAS on the producer index, a cached
 * producer limit so producers rarely read the consumer's cache line, a release store per slot), with
 * three state bits folded into the producer word so that one CAS validates everything a send depends on:
 * <pre>
 *   63                                   7 6            1   0
 *  +--------------------------------------+--------------+---+
 *  |               slot index             | reserve epoch| C |   C = closed
 *  +--------------------------------------+--------------+---+
 * </pre>
 *
 * <h2>Threads</h2>
 * Any thread may call the send side ({@link #trySend}, {@link #send}, {@link #trySendMany(List, int, int)},
 * {@link #sendMany(List, int, int)}, {@link #reserve},
 * {@link #sendReserved}, {@link #releaseReserved}), {@link #close()}, {@link #closeExceptionally} and the
 * read-only methods. The receive side ({@link #poll}, {@link #tryRecv}, {@link #recv}, {@link #tryRecvMany},
 * {@link #recvMany}, {@link #afterReceive}, {@link #awaitData(Wakeable)}) belongs to one consumer at a time.
 *
 * <h2>Progress</h2>
 * Claims are lock-free: a CAS fails only because another producer claimed, a reservation was granted or
 * the mailbox closed. A batched send ({@link RunClaim}) claims its run, as much of it as fits, with one CAS: a
 * run is admitted whole before a close or refused whole after it, contiguous in the ring. The consumer's
 * receive is wait-free while a slot is published; a receive that finds
 * a slot claimed but not yet published spins (yielding) until its producer publishes, as JCTools'
 * {@code poll} does. Blocking methods spin briefly, then park.
 *
 * <h2>Visibility</h2>
 * A producer's writes to a slot happen-before the consumer's read of it: the slot's publication is a
 * release store paired with the consumer's acquire load ({@code isPublished}/{@code poll}). The consumer
 * frees a slot with plain stores followed by the release store of {@code consumerIndex}, paired with the
 * producers' acquire of {@code consumerIndex} when they refresh {@code producerLimit}; so a producer
 * never writes a slot the consumer is still reading.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> "full" is {@code occupied + reserved >= capacity}, and the reserved count includes a
 * reserved send that has claimed its slot but not yet returned its permit, so a send may be refused
 * while {@code size() < capacity()}. {@link #size()} counts claimed slots, including ones whose producer
 * has not yet published.
 *
 * @param <E> the message type
 */
public abstract class MailboxRing<E> extends RingL5Pad {
    /** Largest capacity: 2^30. */
    public static final int MAX_CAPACITY = 1 << 30;
    /** {@link #claim()} result: no room. */
    public static final long CLAIM_FULL = -1L;
    /** {@link #claim()} result: the mailbox is closed. */
    public static final long CLAIM_CLOSED = -2L;

    static final long CLOSED = 1L;
    static final long EPOCH_ONE = 2L;
    static final long EPOCH_MASK = 0x7EL;
    static final int INDEX_SHIFT = 7;
    /** {@link #closeState} of a normal close. */
    static final Object NORMAL_CLOSE = new Object();
    /**
     * A consumer backing off on an empty mailbox looks at the close state once per this many steps (a power of
     * two), so that its wait does not keep pulling a line producers write. Delays the sight of a close by at most
     * that many spin or yield steps; the back-off's end (park) always looks.
     */
    static final int CLOSE_CHECK_STEPS = 32;
    /** A deadline meaning "no deadline". */
    protected static final long NO_DEADLINE = Long.MIN_VALUE;

    /**
     * Send on a full mailbox: spins, then yields, before parking. The yields matter for a consumer that receives
     * one message at a time: each receive frees one slot, and a producer that parked at once would pay a
     * park/unpark round trip per message.
     */
    static final int SEND_SPINS = 64;
    static final int SEND_YIELDS = 64;

    private static volatile RingAccess access;

    @SuppressWarnings("this-escape") // the registry reads only fields the superclass constructors have set
    protected MailboxRing(int capacity, boolean singleProducer, String name) {
        super(checkCapacity(capacity), singleProducer, Objects.requireNonNull(name, "name"));
        MailboxEvents.register(this); // weakly, for the JFR consumer-stall check: see MailboxEvents.MODE
    }

    /** How {@link #of} reaches the ring of a mailbox that wraps one instead of being one. */
    public interface RingAccess {
        /** @return the ring behind {@code mailbox} */
        MailboxRing<?> ring(Mailbox<?> mailbox);
    }

    /** Installed once by the mailbox package (the JDK's SharedSecrets pattern). */
    public static void installAccess(RingAccess ringAccess) {
        access = ringAccess;
    }

    /**
     * @return the ring behind {@code mailbox}; every {@code Mailbox} has one (the interface is sealed)
     */
    @SuppressWarnings("unchecked")
    public static <T> MailboxRing<T> of(Mailbox<T> mailbox) {
        Objects.requireNonNull(mailbox, "mailbox");
        if (mailbox instanceof MailboxRing) {
            return (MailboxRing<T>) mailbox;
        }
        return (MailboxRing<T>) access.ring(mailbox);
    }

    /**
     * @return {@code capacity} rounded up to a power of two
     * @throws IllegalArgumentException unless {@code 1 <= capacity <= 2^30}
     */
    public static int checkCapacity(int capacity) {
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capacity: " + capacity + " (expected: 1 .. " + MAX_CAPACITY + ")");
        }
        return capacity == 1 ? 1 : Integer.highestOneBit(capacity - 1) << 1;
    }

    // ------------------------------------------------------------------ slot storage (subclasses)

    /** Checks a message before anything is claimed; throws on bad input. Any thread. */
    protected abstract void validate(E msg);

    /** Writes {@code msg} into the claimed slot {@code index} and publishes it (release). Producer. */
    protected abstract void publish(long index, E msg);

    /**
     * As {@link #publish}, but the caller wakes the consumer itself: a batched send publishes each slot of its
     * run with this, then calls {@link #signalConsumer()} once. The default publishes and signals per slot
     * (correct, one read of {@code consumerWaiter} more per message). Producer.
     */
    protected void publishQuiet(long index, E msg) {
        publish(index, msg);
    }

    /**
     * Publishes a placeholder into the claimed slot {@code index}: {@link #poll()} frees it and moves on without
     * returning it. Used by {@link #reserve} to reset a saturated epoch (at most once per 63 grants without a
     * send), so {@link #admitted()} and {@link #received()} count these rare slots too.
     */
    protected abstract void publishSkip(long index);

    /** @return whether slot {@code index} is published (acquire). Consumer. */
    protected abstract boolean isPublished(long index);

    /**
     * Takes the message at the consumer index if it is published, frees its slot and advances the consumer
     * index (release). Does not wake parked producers: call {@link #afterReceive(int)} once per batch.
     * Consumer only.
     *
     * @return the message, or null if the slot is not published (empty, or a producer is mid-publish); a
     *         placeholder from {@link #publishSkip} is freed and skipped, never returned
     */
    public abstract E poll();

    // ------------------------------------------------------------------ producer side

    /**
     * Claims the next slot for an unreserved send. Any thread.
     *
     * @return the slot index, {@link #CLAIM_FULL} or {@link #CLAIM_CLOSED}
     */
    protected final long claim() {
        final int capacity = this.capacity;
        long limit = lvProducerLimit();
        for (;;) {
            final long word = lvProducerIndex();
            if ((word & CLOSED) != 0) {
                return CLAIM_CLOSED;
            }
            final long index = word >>> INDEX_SHIFT;
            // NOTE: 'reserved' is read after 'word'. reserve() raises 'reserved' before it bumps the epoch in the
            // word, so either this read sees the new reservation or the CAS below fails and we read again.
            // NOTE: clamped at 0: a caller that spends permits it does not hold (an upstream breaking §1.3 into a
            // MailboxSubscriber) can drive 'reserved' below 0, and must not make us claim past the capacity.
            final long wanted = index + Math.max(0L, lvReserved());
            if (wanted >= limit) {
                // pairs with soConsumerIndex in poll(): the slot we may claim has been freed by the consumer
                final long cIndex = lvConsumerIndex();
                limit = cIndex + capacity;
                sampleOccupancy(index - cIndex);
                if (wanted >= limit) {
                    return CLAIM_FULL;
                }
                // NOTE: racing producers may store an older (smaller) limit over a newer one: only conservative.
                soProducerLimit(limit);
            }
            if (casProducerIndex(word, (index + 1) << INDEX_SHIFT)) {
                return index;
            }
        }
    }

    /**
     * Sends without waiting.
     *
     * @return false if full
     * @throws MailboxClosedException if closed
     */
    public final boolean trySend(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        final long index = claim();
        if (index < 0) {
            return refused(index, "trySend");
        }
        publish(index, msg);
        return true;
    }

    /**
     * As {@link #trySend}, answering instead of throwing: one claim, one publish, no allocation. Any thread.
     *
     * @return {@code OK}, {@code FULL} (counted as refused) or {@code CLOSED} (counted as rejected closed)
     */
    public final SendResult offer(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        final long index = claim();
        if (index >= 0) {
            publish(index, msg);
            return SendResult.OK;
        }
        if (index == CLAIM_CLOSED) {
            REJECTED_CLOSED.getAndAdd(this, 1L);
            return SendResult.CLOSED;
        }
        REFUSED.getAndAdd(this, 1L);
        return SendResult.FULL;
    }

    /** Sends, parking while full. */
    public final void send(E msg) throws InterruptedException {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        publish(claimBlocking(NO_DEADLINE, "send"), msg);
    }

    /** Sends, parking at most {@code timeout} while full; false on timeout. */
    public final boolean send(E msg, Duration timeout) throws InterruptedException {
        Objects.requireNonNull(msg, "msg");
        final long deadline = deadline(timeout);
        validate(msg);
        final long index = claimBlocking(deadline, "send");
        if (index < 0) {
            return false;
        }
        publish(index, msg);
        return true;
    }

    // ------------------------------------------------------------------ batched send (runs: see RunClaim)

    /**
     * Sends the run {@code batch[from .. to)} without waiting: claims as many slots as are free, up to the run,
     * with one CAS, and publishes them. Any thread.
     *
     * @return how many were admitted, {@code batch[from]} first; 0 if the mailbox is full or the run empty
     * @throws MailboxClosedException if closed (and the run is not empty): nothing was admitted
     */
    public final int trySendMany(List<? extends E> batch, int from, int to) {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return n == 0 ? 0 : RunClaim.trySendRun(this, batch, null, from, n);
    }

    /** As {@link #trySendMany(List, int, int)}, from an array. */
    public final int trySendMany(E[] batch, int from, int to) {
        final int n = RunClaim.checkRun(this, null, batch, from, to);
        return n == 0 ? 0 : RunClaim.trySendRun(this, null, batch, from, n);
    }

    /**
     * Sends the run {@code batch[from .. to)}, parking while the mailbox is full, until all of it is admitted.
     * Any thread.
     *
     * @return {@code to - from}, or fewer if the mailbox was closed (or the thread interrupted, its flag then set
     *         again) after part of the run was admitted
     * @throws MailboxClosedException if closed before any of the run was admitted
     * @throws InterruptedException if interrupted on entry, or while parked before any of the run was admitted
     */
    public final int sendMany(List<? extends E> batch, int from, int to) throws InterruptedException {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return RunClaim.sendRunBlocking(this, batch, null, from, n, NO_DEADLINE);
    }

    /** As {@link #sendMany(List, int, int)}, from an array. */
    public final int sendMany(E[] batch, int from, int to) throws InterruptedException {
        final int n = RunClaim.checkRun(this, null, batch, from, to);
        return RunClaim.sendRunBlocking(this, null, batch, from, n, NO_DEADLINE);
    }

    /**
     * As {@link #sendMany(List, int, int)}, parking at most {@code timeout} in all.
     *
     * @return how many were admitted: fewer than {@code to - from} also when the timeout elapsed first
     */
    public final int sendMany(List<? extends E> batch, int from, int to, Duration timeout)
            throws InterruptedException {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        return RunClaim.sendRunBlocking(this, batch, null, from, n, deadline(timeout));
    }

    /** As {@link #sendMany(List, int, int, Duration)}, from an array. */
    public final int sendMany(E[] batch, int from, int to, Duration timeout) throws InterruptedException {
        final int n = RunClaim.checkRun(this, null, batch, from, to);
        return RunClaim.sendRunBlocking(this, null, batch, from, n, deadline(timeout));
    }

    /** Counts a refused or rejected claim: false when full, throws when closed. */
    protected final boolean refused(long claimResult, String op) {
        if (claimResult == CLAIM_CLOSED) {
            throw rejectClosed(op);
        }
        REFUSED.getAndAdd(this, 1L);
        return false;
    }

    /** Counts a send rejected because the mailbox is closed and returns the exception to throw. */
    protected final MailboxClosedException rejectClosed(String op) {
        REJECTED_CLOSED.getAndAdd(this, 1L);
        return new MailboxClosedException(op + " on a closed mailbox: name=" + name, closeCause());
    }

    /**
     * Claims a slot, parking while full.
     *
     * @param deadline a {@link System#nanoTime()} deadline, or {@link #NO_DEADLINE}
     * @return the slot index, or {@link #CLAIM_FULL} if the deadline passed
     */
    protected final long claimBlocking(long deadline, String op) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        for (int spins = 0; ; spins++) {
            final long index = claim();
            if (index >= 0) {
                return index;
            }
            if (index == CLAIM_CLOSED) {
                throw rejectClosed(op);
            }
            final Thread self = Thread.currentThread();
            // NOTE: only an untimed send would wait forever here. A timed one waits out its timeout and returns
            // false, as anywhere else (room may still come from reservations a subscriber releases).
            if (deadline == NO_DEADLINE && consumerThread == self) {
                throw new IllegalStateException(op + " would wait forever: the mailbox is full and the caller is its "
                        + "consumer, the only thread that can make room: name=" + name + ", capacity=" + capacity);
            }
            long remaining = 0L;
            if (deadline != NO_DEADLINE && (remaining = deadline - System.nanoTime()) <= 0L) {
                REFUSED.getAndAdd(this, 1L);
                return CLAIM_FULL;
            }
            if (spins < SEND_SPINS + SEND_YIELDS) {
                if (spins < SEND_SPINS) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
                continue;
            }
            // The CAS in pushWaiter is a full fence: the claim() below reads consumerIndex after our node is
            // visible. Pairs with the fullFence in afterReceive(), which stores consumerIndex before it looks
            // for waiters. One of the two sides sees the other: no lost wake-up.
            pushWaiter(PRODUCER_WAITERS, self);
            final long retry = claim();
            if (retry >= 0) {
                return retry;
            }
            if (retry == CLAIM_CLOSED) {
                throw rejectClosed(op);
            }
            parkProducer(deadline, remaining);
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
    }

    /** Parks a producer that has pushed itself on {@code producerWaiters} and found no room again; counts it. */
    final void parkProducer(long deadline, long remaining) {
        PARKED_PRODUCERS.getAndAdd(this, 1);
        PRODUCER_PARKS.getAndAdd(this, 1L);
        final Object parkEvent = MailboxEvents.producerParking(); // JFR ProducerParked; null unless recorded
        try {
            if (deadline == NO_DEADLINE) {
                LockSupport.park(this);
            } else {
                LockSupport.parkNanos(this, remaining);
            }
        } finally {
            PARKED_PRODUCERS.getAndAdd(this, -1);
            MailboxEvents.producerParked(parkEvent, this);
        }
    }

    /** Wakes the consumer if it waits for data; called by producers after each publish. */
    protected final void signalConsumer() {
        // NOTE: a read of a line that changes only when the consumer parks: cheap while it is busy.
        final Object waiter = lvConsumerWaiter();
        if (waiter != null && casConsumerWaiter(waiter, null)) {
            WaiterNode.wake(waiter);
        }
    }

    // ------------------------------------------------------------------ reservations (the subscriber side)

    /**
     * Reserves up to {@code n} slots for later {@link #sendReserved} calls, which then never find the mailbox
     * full. Any thread.
     *
     * @return how many were granted, 0 .. n (0 when full, closed, or {@code n <= 0})
     */
    public final int reserve(int n) {
        final int capacity = this.capacity;
        while (n > 0) {
            final long word = lvProducerIndex();
            if ((word & CLOSED) != 0) {
                return 0;
            }
            final long r = lvReserved();
            final long free = capacity - ((word >>> INDEX_SHIFT) - lvConsumerIndex()) - Math.max(0L, r);
            if (free <= 0) {
                return 0;
            }
            long grant = Math.min(n, free);
            if (!casReserved(r, r + grant)) {
                continue;
            }
            // Bump the epoch: a producer that read 'reserved' before our CAS now fails its claim CAS and re-reads.
            long w;
            for (;;) {
                w = lvProducerIndex();
                if ((w & CLOSED) != 0) {
                    releaseReserved(grant);
                    return 0;
                }
                if ((w & EPOCH_MASK) == EPOCH_MASK) {
                    break; // saturated: handled below
                }
                if (casProducerIndex(w, w + EPOCH_ONE)) {
                    break;
                }
            }
            if ((w & EPOCH_MASK) == EPOCH_MASK) {
                // 63 grants since the last claim: a further bump would wrap the epoch and could let a producer that
                // read the word 64 grants ago pass its CAS. Give the grant back, reset the epoch by claiming one
                // slot for a placeholder the consumer skips, and try again. No room for it: grant nothing; the
                // consumer's next receive makes room and wakes awaitRoom() callers.
                releaseReserved(grant);
                final long index = claim();
                if (index < 0) {
                    return 0;
                }
                publishSkip(index);
                continue;
            }
            // Claims up to index(w) may have been checked without our grant: give back any excess.
            final long excess = ((w >>> INDEX_SHIFT) - lvConsumerIndex()) + lvReserved() - capacity;
            if (excess > 0) {
                final long undo = Math.min(excess, grant);
                releaseReserved(undo);
                grant -= undo;
            }
            return (int) grant;
        }
        return 0;
    }

    /**
     * Sends using one reserved slot. Any thread holding a permit from {@link #reserve}.
     *
     * @return false if the mailbox is closed (the permit is returned)
     * @throws IllegalStateException if nothing is reserved, or no slot is free: either way the caller held no permit
     */
    public final boolean sendReserved(E msg) {
        Objects.requireNonNull(msg, "msg");
        validate(msg);
        if (lvReserved() <= 0) {
            // a caller bug (a send beyond its permits): fail before claiming rather than drive 'reserved' negative
            throw new IllegalStateException("sendReserved without a reserved slot: name=" + name + ", reserved="
                    + lvReserved());
        }
        final int capacity = this.capacity;
        long limit = lvProducerLimit();
        for (;;) {
            final long word = lvProducerIndex();
            if ((word & CLOSED) != 0) {
                // Give the permit back, but never below zero: a caller without one (a §1.3-breaking upstream racing
                // the close) must not make the count lie.
                takePermits(1L);
                wakeProducers();
                REJECTED_CLOSED.getAndAdd(this, 1L);
                return false;
            }
            final long index = word >>> INDEX_SHIFT;
            if (index >= limit) {
                limit = lvConsumerIndex() + capacity; // pairs with soConsumerIndex in poll()
                if (index >= limit) {
                    throw new IllegalStateException("sendReserved without a reserved slot: name=" + name
                            + ", capacity=" + capacity + ", reserved=" + lvReserved());
                }
                soProducerLimit(limit);
            }
            if (casProducerIndex(word, (index + 1) << INDEX_SHIFT)) {
                // NOTE: the slot is counted as occupied and as reserved until this decrement: only conservative.
                // Decrement-if-positive: callers racing without permits (a §1.3-breaking upstream) must not drive
                // the count below zero; the permit holder they robbed then finds none and gets the exception above.
                takePermits(1L);
                publish(index, msg);
                return true;
            }
        }
    }

    /**
     * Sends the run {@code batch.get(from) .. batch.get(to - 1)} using {@code to - from} reserved slots: the batched
     * {@link #sendReserved}, one claim CAS and one permit update for the whole run. Any thread holding that many
     * permits from {@link #reserve}; the run is contiguous, FIFO with the caller's other sends, and admitted whole
     * before a close or refused whole after it.
     *
     * @return {@code to - from}, or 0 if the mailbox is closed (the run's permits are returned)
     * @throws NullPointerException if {@code batch} or an element of the run is null: nothing is admitted
     * @throws IllegalStateException if fewer than {@code to - from} slots are reserved, or not that many are free:
     *         either way the caller held fewer permits than the run
     */
    public final int sendReservedMany(List<? extends E> batch, int from, int to) {
        final int n = RunClaim.checkRun(this, batch, null, from, to);
        if (n == 0) {
            return 0;
        }
        if (lvReserved() < n) {
            throw new IllegalStateException("sendReservedMany without " + n + " reserved slots: name=" + name
                    + ", reserved=" + lvReserved());
        }
        return RunClaim.sendReservedRun(this, batch, from, n);
    }

    /** Removes up to {@code n} permits, never below zero: every decrement of {@code reserved} goes through here. */
    final void takePermits(long n) {
        long r;
        while ((r = lvReserved()) > 0 && !casReserved(r, Math.max(0L, r - n))) {
            Thread.onSpinWait(); // another permit holder moved it; read again
        }
    }

    /** Returns {@code n} unused permits and wakes producers waiting for room. Any thread. */
    public final void releaseReserved(long n) {
        if (n > 0) {
            // Never below zero, even for a caller that gives back more than it holds (its own accounting broken by
            // a §1.3-breaking upstream): the count must not lie, and room checks must not over-admit.
            takePermits(n);
            VarHandle.fullFence(); // our release before the waiter check (the CAS may not have run)
            wakeProducers();
        }
    }

    /** @return slots reserved and not yet used */
    public final long reserved() {
        return lvReserved();
    }

    /**
     * Registers {@code w} to be woken (once) when the consumer frees room, permits are released, or the
     * mailbox closes. Any thread.
     *
     * @return false if there is room (or the mailbox is closed) already: the caller should retry now; the
     *         registration may still fire later, so {@code w} must tolerate a spurious wake
     */
    public final boolean awaitRoom(Wakeable w) {
        pushWaiter(PRODUCER_WAITERS, Objects.requireNonNull(w, "w"));
        final long word = lvProducerIndex();
        final boolean waiting = (word & CLOSED) == 0
                && (word >>> INDEX_SHIFT) + Math.max(0L, lvReserved()) >= lvConsumerIndex() + capacity;
        if (waiting) {
            PRODUCER_PARKS.getAndAdd(this, 1L);
        }
        return waiting;
    }

    /** Registers {@code w} to be woken once when the mailbox closes (at once if it is closed). Any thread. */
    public final void onClose(Wakeable w) {
        pushWaiter(CLOSE_LISTENERS, Objects.requireNonNull(w, "w"));
        if (isClosed()) {
            WaiterNode.wakeAll((WaiterNode) CLOSE_LISTENERS.getAndSet(this, null));
        }
    }

    final void pushWaiter(VarHandle stack, Object waiter) {
        for (;;) {
            final WaiterNode head = (WaiterNode) stack.getVolatile(this);
            if (stack.compareAndSet(this, head, new WaiterNode(waiter, head))) {
                return;
            }
        }
    }

    final void wakeProducers() {
        if (lvProducerWaiters() != null) {
            WaiterNode.wakeAll((WaiterNode) PRODUCER_WAITERS.getAndSet(this, null));
        }
    }

    // ------------------------------------------------------------------ consumer side

    /**
     * Ends a receive that took {@code n >= 1} messages: samples the high-water mark and wakes producers
     * parked on a full mailbox. Once per batch. Consumer only.
     */
    public final void afterReceive(int n) {
        if (n > highWaterMark) {
            sampleOccupancy(n);
        }
        // StoreLoad: the consumerIndex store in poll() must be visible before we look for waiters; pairs with the
        // CAS that pushes a waiter in claimBlocking()/awaitRoom(), each followed by a fresh read of consumerIndex.
        VarHandle.fullFence();
        wakeProducers();
    }

    /**
     * Announces the room freed by skipping a placeholder (see {@link #publishSkip}): a receive that frees only
     * placeholders returns nothing, so {@link #afterReceive} is not called for it. Consumer only; rare.
     */
    protected final void afterSkip() {
        VarHandle.fullFence(); // as in afterReceive: our consumerIndex store before the waiter check
        wakeProducers();
    }

    /** Receives without waiting; null if nothing is published now. Consumer only. */
    public final E tryRecv() {
        final E e = poll();
        if (e != null) {
            afterReceive(1);
        }
        return e;
    }

    /** Receives, parking while empty; null once closed normally and drained. Consumer only. */
    public final E recv() throws InterruptedException {
        return recv0(NO_DEADLINE);
    }

    /** Receives, parking at most {@code timeout}; null on timeout or end of stream. Consumer only. */
    public final E recv(Duration timeout) throws InterruptedException {
        return recv0(deadline(timeout));
    }

    private E recv0(long deadline) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        for (;;) {
            final E e = poll();
            if (e != null) {
                afterReceive(1);
                return e;
            }
            if (endOfStream() || !awaitData(deadline)) {
                return null;
            }
        }
    }

    /** Hands up to {@code max} messages present now to {@code sink}. Consumer only. */
    public final int tryRecvMany(Consumer<? super E> sink, int max) {
        Objects.requireNonNull(sink, "sink");
        checkMax(max);
        return drain(sink, max);
    }

    /** Parks until a message is present, then as {@link #tryRecvMany}; 0 at end of stream. Consumer only. */
    public final int recvMany(Consumer<? super E> sink, int max) throws InterruptedException {
        Objects.requireNonNull(sink, "sink");
        checkMax(max);
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        if (max == 0) {
            return 0;
        }
        for (;;) {
            final int n = drain(sink, max);
            if (n > 0 || endOfStream()) {
                return n;
            }
            awaitData(NO_DEADLINE);
        }
    }

    private int drain(Consumer<? super E> sink, int max) {
        final Thread previous = enterConsumer();
        int n = 0;
        try {
            E e;
            while (n < max && (e = poll()) != null) {
                n++;
                sink.accept(e);
            }
        } finally {
            exitConsumer(previous);
            if (n > 0) {
                afterReceive(n);
            }
        }
        return n;
    }

    /**
     * Marks the current thread as the consumer for the duration of a batch, so that a blocking send made from
     * inside the batch on a full mailbox fails instead of waiting forever, and a second thread entering a batch
     * at the same time is reported (best effort). Consumer only.
     *
     * @throws IllegalStateException if another thread's batch is under way
     *
     * @return the previous mark, to give to {@link #exitConsumer}
     */
    public final Thread enterConsumer() {
        final Thread self = Thread.currentThread();
        final Thread previous = consumerThread;
        if (previous != null && previous != self) {
            // NOTE: best effort, at no cost: the field is plain, so two racing consumers may miss each other, but a
            // consumer that finds another thread's mark knows the one-consumer rule is broken.
            throw new IllegalStateException("two consumers at once: " + self.getName() + " entered a receive while "
                    + previous.getName() + " is in one: name=" + name);
        }
        consumerThread = self;
        return previous;
    }

    /** Restores the mark saved by {@link #enterConsumer()}. Consumer only. */
    public final void exitConsumer(Thread previous) {
        consumerThread = previous;
    }

    protected static void checkMax(int max) {
        if (max < 0) {
            throw new IllegalArgumentException("max: " + max + " (expected: >= 0)");
        }
    }

    /** @return whether the mailbox is closed with nothing admitted past {@code cIndex}. Consumer only. */
    private boolean endOfStreamAt(long cIndex) {
        final long word = lvProducerIndex();
        return (word >>> INDEX_SHIFT) == cIndex && (word & CLOSED) != 0;
    }

    /**
     * Called by the consumer after {@link #poll()} found nothing.
     *
     * @return true if the mailbox is closed normally and drained
     * @throws MailboxClosedException if it is closed exceptionally and drained
     */
    public final boolean endOfStream() {
        // NOTE: closeState is set before the CLOSED bit and lives on the read-mostly signals line: while the
        // mailbox is open this check leaves the producer word's line alone (see awaitData).
        if (closeState == null) {
            return false;
        }
        final long word = lvProducerIndex();
        if ((word & CLOSED) == 0 || (word >>> INDEX_SHIFT) != lvConsumerIndex()) {
            return false;
        }
        final Throwable cause = closeCause();
        if (cause != null) {
            throw new MailboxClosedException("mailbox closed exceptionally and drained: name=" + name, cause);
        }
        return true;
    }

    /**
     * Parks the consumer until the slot at the consumer index is published, the mailbox is closed and drained,
     * or the deadline passes.
     *
     * @return false only if the deadline passed
     */
    protected final boolean awaitData(long deadline) throws InterruptedException {
        final long cIndex = lpConsumerIndex();
        final WaitPolicy policy = waitPolicy;
        for (int step = 0; ; ) {
            if (isPublished(cIndex)) {
                return true;
            }
            // NOTE: while backing off we read the slot we wait for, and the close state only every CLOSE_CHECK_STEPS
            // steps; never the producer word. Every read of a line a producer writes makes its next write fetch the
            // line back: a cross-core round trip per message when the two threads run in step. (The close state
            // shares its line with 'reserved', which a MailboxSubscriber's sends write once per message.)
            if ((step & (CLOSE_CHECK_STEPS - 1)) == 0 && closeState != null && endOfStreamAt(cIndex)) {
                return true;
            }
            if (step >= 0 && policy.idle(step)) {
                step++;
                continue;
            }
            step = -1; // the back-off is spent: from now on, yield while a send is in flight, else park
            final long word = lvProducerIndex();
            final long index = word >>> INDEX_SHIFT;
            if (index == cIndex && (word & CLOSED) != 0) {
                return true;
            }
            if (index != cIndex) {
                // NOTE: a producer is between its claim and its publish. It publishes without waiting for anyone,
                // so we yield instead of parking.
                Thread.yield();
                continue;
            }
            long remaining = 0L;
            if (deadline != NO_DEADLINE && (remaining = deadline - System.nanoTime()) <= 0L) {
                return false;
            }
            final Thread self = Thread.currentThread();
            // Volatile store, then a fresh read of the producer word: pairs with the claim CAS followed by
            // lvConsumerWaiter() in signalConsumer(). Either the producer sees us or we see its claim.
            svConsumerWaiter(self);
            final long again = lvProducerIndex();
            if ((again >>> INDEX_SHIFT) == cIndex && (again & CLOSED) == 0) {
                countConsumerPark();
                if (deadline == NO_DEADLINE) {
                    LockSupport.park(this);
                } else {
                    LockSupport.parkNanos(this, remaining);
                }
            }
            casConsumerWaiter(self, null);
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
        }
    }

    /**
     * Backs off on the consumer's own thread, as {@code policy} says, until the slot at the consumer index is
     * published, the mailbox is closing, {@code role} is cancelled, or the back-off is spent. Reads only the
     * slot and the read-mostly close state while it waits (see {@link #awaitData(long)}). For a drain running on
     * a thread the user dedicated to consuming (a publisher's executor), before it registers with
     * {@link #awaitData(Wakeable)}. Consumer only.
     *
     * @param role the subscription waiting, or null; its cancel ends the wait early
     * @return true if a message (or the close) arrived: poll again; false if the back-off was spent or the
     *         role cancelled
     */
    public final boolean idleUntilData(WaitPolicy policy, ConsumerRole role) {
        final long cIndex = lpConsumerIndex();
        for (int step = 0; ; step++) {
            if (isPublished(cIndex)) {
                return true;
            }
            if ((step & (CLOSE_CHECK_STEPS - 1)) == 0 && closeState != null) {
                return true; // see awaitData(long): the close state is looked at only every few steps
            }
            if ((role != null && role.isCancelled()) || !policy.idle(step)) {
                return false;
            }
        }
    }

    /** Sets how {@code recv}/{@code recvMany} wait before parking; call before the mailbox is shared. */
    public final void waitPolicy(WaitPolicy policy) {
        this.waitPolicy = Objects.requireNonNull(policy, "policy");
    }

    /** @return how {@code recv}/{@code recvMany} wait before parking */
    public final WaitPolicy waitPolicy() {
        return waitPolicy;
    }

    /**
     * Registers {@code w} to be woken once when a message may be present or the mailbox closes: the
     * non-blocking counterpart of {@link #awaitData(long)}, for a drain loop that must not park. Consumer only.
     *
     * @return false if a message is present (or in flight) or the mailbox is closed already: drain again now.
     *         <b>Note:</b> {@code w} may still be woken once after a false return (a producer took the
     *         registration just before it was withdrawn), so a wake must tolerate finding nothing to do. A message
     *         in flight (claimed, not yet published) is answered with false rather than a registration: its
     *         producer may have looked for a waiter before our registration was visible.
     */
    public final boolean awaitData(Wakeable w) {
        final boolean renewal = lvConsumerWaiter() == Objects.requireNonNull(w, "w"); // the same wait, asked again
        svConsumerWaiter(w); // pairs with signalConsumer(), as in awaitData(long)
        final long word = lvProducerIndex();
        if ((word >>> INDEX_SHIFT) != lvConsumerIndex() || (word & CLOSED) != 0) {
            casConsumerWaiter(w, null);
            return false;
        }
        if (!renewal) {
            countConsumerPark();
        }
        return true;
    }

    /** Withdraws a registration made by {@link #awaitData(Wakeable)}, if it has not fired. */
    public final void cancelAwaitData(Wakeable w) {
        casConsumerWaiter(w, null);
    }

    // ------------------------------------------------------------------ consumer role (adapters)

    /** {@link #attachConsumer} result: the role is yours; poll now. */
    public static final int ROLE_ACQUIRED = 0;
    /** {@link #attachConsumer} result: accepted behind a cancelled holder; {@code wake()} hands you the role. */
    public static final int ROLE_QUEUED = 1;
    /** {@link #attachConsumer} result: a live holder has the role; refuse the subscriber. */
    public static final int ROLE_REFUSED = 2;

    /**
     * Asks for the consumer role: one subscription at a time may poll, whichever face it uses. A holder that
     * is cancelled but still finishing its last delivery does not refuse a newcomer: the newcomer is queued
     * and handed the role by {@link #detachConsumer} when the holder's drain exits. Any thread.
     *
     * @return {@link #ROLE_ACQUIRED}, {@link #ROLE_QUEUED} or {@link #ROLE_REFUSED}
     */
    public final int attachConsumer(ConsumerRole role) {
        Objects.requireNonNull(role, "role");
        for (;;) {
            final ConsumerRole current = consumerRole;
            if (current == null) {
                if (CONSUMER_ROLE.compareAndSet(this, null, role)) {
                    return ROLE_ACQUIRED;
                }
                continue;
            }
            if (!current.isCancelled()) {
                return ROLE_REFUSED;
            }
            final ConsumerRole next = nextConsumerRole;
            if (next != null && !next.isCancelled()) {
                return ROLE_REFUSED;
            }
            if (!NEXT_CONSUMER_ROLE.compareAndSet(this, next, role)) {
                continue;
            }
            // NOTE: the holder may have detached between our read of consumerRole and the CAS above, seeing no
            // successor; hand off ourselves. handOff() is idempotent, so racing with the holder is benign.
            if (consumerRole == null && handOff() == role) {
                return ROLE_ACQUIRED;
            }
            return ROLE_QUEUED;
        }
    }

    /**
     * Gives up the consumer role; call once the drain loop has exited for good (no poll can follow), on the
     * thread that ran it. Hands the role to a queued successor and wakes it. Any thread.
     */
    public final void detachConsumer(ConsumerRole role) {
        if (CONSUMER_ROLE.compareAndSet(this, role, null)) {
            final ConsumerRole next = handOff();
            if (next != null) {
                next.wake();
            }
        }
    }

    /** @return the role holder now, or null */
    public final ConsumerRole consumerRole() {
        return consumerRole;
    }

    /** Moves a queued successor into the empty role; returns it, or null if there was none or the role is taken. */
    private ConsumerRole handOff() {
        for (;;) {
            final ConsumerRole next = nextConsumerRole;
            if (next == null || consumerRole != null) {
                return null;
            }
            if (CONSUMER_ROLE.compareAndSet(this, null, next)) {
                NEXT_CONSUMER_ROLE.compareAndSet(this, next, null);
                return next;
            }
        }
    }

    // ------------------------------------------------------------------ close

    /** Closes; idempotent. */
    public final void close() {
        close0(NORMAL_CLOSE);
    }

    /** Closes recording {@code cause}; the first close decides. */
    public final void closeExceptionally(Throwable cause) {
        close0(Objects.requireNonNull(cause, "cause"));
    }

    private void close0(Object state) {
        if (CLOSE_STATE.compareAndSet(this, null, state) && state != NORMAL_CLOSE) { // the first closer decides
            MailboxEvents.closedExceptionally(this, (Throwable) state); // JFR ClosedExceptionally, if recorded
        }
        for (;;) {
            // every closer sees the bit set before it returns, so isClosed() is true after close() returns
            final long word = lvProducerIndex();
            if ((word & CLOSED) != 0) {
                return;
            }
            if (casProducerIndex(word, word | CLOSED)) {
                break;
            }
        }
        // The CAS above is a full fence: a waiter that registered before it is woken here; one that registers
        // after it re-reads the word and sees CLOSED.
        final Object consumer = CONSUMER_WAITER.getAndSet(this, null);
        if (consumer != null) {
            WaiterNode.wake(consumer);
        }
        WaiterNode.wakeAll((WaiterNode) PRODUCER_WAITERS.getAndSet(this, null));
        WaiterNode.wakeAll((WaiterNode) CLOSE_LISTENERS.getAndSet(this, null));
    }

    /** @return whether closed */
    public final boolean isClosed() {
        return (lvProducerIndex() & CLOSED) != 0;
    }

    /** @return whether closed and every admitted message has been received */
    public final boolean isTerminated() {
        final long word = lvProducerIndex();
        return (word & CLOSED) != 0 && (word >>> INDEX_SHIFT) == lvConsumerIndex();
    }

    /** @return the cause of an exceptional close, or null */
    public final Throwable closeCause() {
        final Object state = closeState;
        return state instanceof Throwable ? (Throwable) state : null;
    }

    // ------------------------------------------------------------------ introspection

    /** @return the capacity */
    public final int capacity() {
        return capacity;
    }

    /** @return whether built single-producer */
    public final boolean isSingleProducer() {
        return singleProducer;
    }

    /** @return the name given at build time */
    public final String name() {
        return name;
    }

    /** @return claimed and not yet received, clamped to 0 .. capacity */
    public final int size() {
        final long cIndex = lvConsumerIndex();
        final long size = (lvProducerIndex() >>> INDEX_SHIFT) - cIndex;
        return (int) Math.max(0L, Math.min(capacity, size));
    }

    /** @return messages claimed since creation */
    public final long admitted() {
        return lvProducerIndex() >>> INDEX_SHIFT;
    }

    /** @return messages received since creation */
    public final long received() {
        return lvConsumerIndex();
    }

    /** @return a snapshot of the counters */
    public final MailboxStats stats() {
        final long received = lvConsumerIndex();
        final long admitted = admitted();
        return new MailboxStats(name, capacity, (int) Math.max(0L, Math.min(capacity, admitted - received)),
                admitted, received, (long) REFUSED.getVolatile(this), (long) REJECTED_CLOSED.getVolatile(this),
                highWaterMark, lvReserved(), (int) PARKED_PRODUCERS.getVolatile(this), lvConsumerWaiter() != null,
                (long) PRODUCER_PARKS.getVolatile(this), (long) CONSUMER_PARKS.getOpaque(this));
    }

    /**
     * Starts a new high-water window: the mark becomes the current size. Any thread; a sample racing the reset
     * may land on either side of it (the mark stays a lower bound of the true peak).
     *
     * @return the mark before the reset: the highest size seen since the previous reset (or creation)
     */
    public final int resetHighWaterMark() {
        final int size = (int) Math.max(0L, Math.min(capacity, admitted() - lvConsumerIndex()));
        return (int) HIGH_WATER_MARK.getAndSet(this, size);
    }

    /**
     * @return a {@link System#nanoTime()} deadline for {@code timeout}, or {@link #NO_DEADLINE} if it is too far
     * @throws IllegalArgumentException if {@code timeout} is negative
     */
    protected static long deadline(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: >= 0)");
        }
        final long nanos = TimeUnit.NANOSECONDS.convert(timeout);
        return nanos >= Long.MAX_VALUE / 2 ? NO_DEADLINE : System.nanoTime() + nanos;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[name=" + name + ", capacity=" + capacity + ", size=" + size()
                + ", closed=" + isClosed() + "]";
    }
}

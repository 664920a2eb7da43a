package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/*
 * The padded field chain of MailboxRing, ordered by which thread writes (JCTools MpscArrayQueue, Agrona
 * AbstractConcurrentArrayQueue):
 *
 *   RingL0Pad -> RingColdFields (final config, the waiting protocol's and the role slot's objects) -> RingL1Pad
 *   -> RingProducerFields (producerIndex, producerLimit: written by every producer) -> RingL2Pad
 *   -> RingSignalFields (reserved, close state: read on every send, written rarely) -> RingL3Pad
 *   -> RingConsumerFields (consumerIndex and the consumer's private state) -> RingL4Pad
 *   -> RingCounterFields (failure-path counters) -> RingL5Pad -> MailboxRing
 *
 * Each pad is 128 bytes (two cache lines, against the adjacent-line prefetcher). @Contended is not used: it needs
 * -XX:-RestrictContended outside the JDK. Every mutable field is private, with a private VarHandle declared on the
 * line after it and named accessors (lv/la/lp/so/sp/cas/xchg/xadd, see package-info); the waiting protocol's fields
 * live in RingWaiters, on lines of their own.
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
    /** Who waits for what on this ring, and who wakes whom: the waiting protocol, on lines of its own. */
    protected final RingWaiters waiters = new RingWaiters();
    /** Which subscription holds the consumer role, and its queued successor. */
    final ConsumerRoles roles = new ConsumerRoles();

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
    private volatile long producerIndex;
    private static final VarHandle PRODUCER_INDEX;
    /** A cached {@code consumerIndex + capacity}: below it, producers need not read the consumer's line. */
    private volatile long producerLimit;
    private static final VarHandle PRODUCER_LIMIT;

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
    private volatile long reserved;
    private static final VarHandle RESERVED;
    /**
     * null while open; {@code MailboxRing.NORMAL_CLOSE} or the cause once closing has been decided. Set (CAS, the
     * first closer decides) before the CLOSED bit; read-mostly, so a waiting consumer may poll it without pulling
     * the producer word's line.
     */
    private volatile Object closeState;
    private static final VarHandle CLOSE_STATE;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            RESERVED = lookup.findVarHandle(RingSignalFields.class, "reserved", long.class);
            CLOSE_STATE = lookup.findVarHandle(RingSignalFields.class, "closeState", Object.class);
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

    final Object lvCloseState() {
        return closeState;
    }

    final boolean casCloseState(Object expect, Object update) {
        return CLOSE_STATE.compareAndSet(this, expect, update);
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
    private volatile long consumerIndex;
    private static final VarHandle CONSUMER_INDEX;
    /**
     * The thread inside a batched receive ({@code tryRecvMany}, {@code recvMany}, a publisher drain), or
     * null. Consumer-written, plain; read only by a producer about to park, which compares it with itself:
     * a thread always sees its own writes, so the self-check is exact.
     */
    private Thread consumerThread;

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

    final Thread lpConsumerThread() {
        return consumerThread;
    }

    final void spConsumerThread(Thread thread) {
        consumerThread = thread;
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
    private volatile long refused;
    private static final VarHandle REFUSED;
    private volatile long rejectedClosed;
    private static final VarHandle REJECTED_CLOSED;
    /** Times a producer parked on a full mailbox, or a subscriber side registered to wait for room. Cumulative. */
    private volatile long producerParks;
    private static final VarHandle PRODUCER_PARKS;
    /**
     * Times the consumer parked on an empty mailbox, or a drain registered to be woken for data. Cumulative.
     * Single writer, the consumer (role hand-overs order one holder's writes before the next one's), so a
     * plain increment published with an opaque store; under the misuse of two consumers at once an increment
     * may be lost, which skews only this figure.
     */
    private volatile long consumerParks;
    private static final VarHandle CONSUMER_PARKS;
    /**
     * The highest occupancy seen: sampled by producers when they refresh producerLimit (at least once per
     * capacity claims, and on every claim near full) and by the consumer from its batch sizes. CAS-max, and
     * only when exceeded, so it is written a handful of times per run.
     */
    private volatile int highWaterMark;
    private static final VarHandle HIGH_WATER_MARK;

    static {
        try {
            final MethodHandles.Lookup lookup = MethodHandles.lookup();
            REFUSED = lookup.findVarHandle(RingCounterFields.class, "refused", long.class);
            REJECTED_CLOSED = lookup.findVarHandle(RingCounterFields.class, "rejectedClosed", long.class);
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

    /** Counts a send refused because the mailbox is full. Any thread. */
    final void countRefused() {
        REFUSED.getAndAdd(this, 1L);
    }

    /** Counts {@code n} sends rejected because the mailbox is closed. Any thread. */
    final void xaddRejectedClosed(long n) {
        REJECTED_CLOSED.getAndAdd(this, n);
    }

    /** Counts a producer park or a subscriber-side room registration. Any thread. */
    final void countProducerPark() {
        PRODUCER_PARKS.getAndAdd(this, 1L);
    }

    /** Counts a consumer park or wake-up registration. Consumer only. */
    protected final void countConsumerPark() {
        CONSUMER_PARKS.setOpaque(this, (long) CONSUMER_PARKS.getOpaque(this) + 1L);
    }

    final long lvRefused() {
        return refused;
    }

    final long lvRejectedClosed() {
        return rejectedClosed;
    }

    final long lvProducerParks() {
        return producerParks;
    }

    final long loConsumerParks() {
        return (long) CONSUMER_PARKS.getOpaque(this);
    }

    final int lvHighWaterMark() {
        return highWaterMark;
    }

    final int xchgHighWaterMark(int update) {
        return (int) HIGH_WATER_MARK.getAndSet(this, update);
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

package dev.mighty.mailbox;

import org.jspecify.annotations.Nullable;

/**
 * How a consumer waits for the next message once it finds the mailbox empty: a bounded back-off (spin with
 * {@link Thread#onSpinWait()}, then {@link Thread#yield()}) that keeps polling the slot it waits for, then a
 * registration for a wake-up (park). The back-off phases are Agrona's {@code BackoffIdleStrategy} and the
 * Disruptor's {@code PhasedBackoffWaitStrategy} without their timed-park phase: after the last yield the
 * consumer parks until a producer's send (or a close) wakes it, so an idle consumer costs nothing.
 *
 * <p>Why wait before parking: a consumer that registers the moment it drains the mailbox empty makes the next
 * send pay a wake-up (a CAS, an {@code unpark} or an executor submit, and a context switch), after which the
 * consumer finds a few messages and drains empty again. A short back-off on a thread dedicated to consuming
 * catches the next message without any of that while the producer keeps sending.
 *
 * <h2>Where it applies</h2>
 * A wait policy spins only on a thread the user dedicated to consuming:
 * <ul>
 *     <li>{@code recv}/{@code recvMany} of a mailbox built with {@link MailboxBuilder#waitPolicy(WaitPolicy)};</li>
 *     <li>the {@link java.util.concurrent.Executor} given to {@code MailboxPublisher} (and
 *     {@code MailboxProcessor}): its drain task waits before it registers and returns;</li>
 *     <li>{@code MailboxFlux.from(mailbox, batchSize, policy)}: the thread polling the fused mailbox (the
 *     {@code publishOn} worker) waits before it reports "empty". Give a policy other than {@link #park()} only
 *     when that worker serves this flux alone (e.g. {@code Schedulers.newSingle}).</li>
 * </ul>
 * Threads the library does not own are not given a back-off: a {@code MailboxPublisher} without an executor (its
 * drain runs on a producer's or requester's thread) always uses {@link #park()}. {@code MailboxFlux.from(mailbox)}
 * without a policy lingers instead, on a budget bounded by the messages it delivered (at most 64 ns of lingering
 * per message, 4 us banked; {@code docs/usage.md}, "Choosing a wait policy"); {@link #park()} given explicitly
 * turns that off. The subscriber side ({@code MailboxSubscriber}) never
 * waits on a thread at all.
 *
 * <h2>Cost and latency</h2>
 * A wait that ends in a park costs at most {@code spins} spin-waits and {@code yields} yields of CPU, once per
 * idle period (then nothing until the next message). A message that arrives during the back-off is seen within
 * one burst of 16 spin-waits (the wait polls once per burst: a consumer that polls after every spin-wait takes a
 * busy producer's messages one at a time, and each take pulls the cache line the producer is filling back to the
 * consumer's core) or one yield; one that arrives after it pays a park/unpark hand-off (tens of microseconds on a busy
 * 2-core machine). {@code docs/usage.md} ("Choosing a wait policy") and {@code docs/benchmarks.md} give measured
 * figures.
 *
 * <p>Instances are immutable and may be shared by any number of mailboxes and threads.
 */
public final class WaitPolicy {
    /** Spin-waits of {@link #defaults()}: a few microseconds, the gap between two sends of a busy producer. */
    public static final int DEFAULT_SPINS = 128;
    /**
     * Yields of {@link #defaults()}. A yield gives the core to any runnable thread (on a 2-core machine the
     * producer may be waiting for it), and costs about a microsecond when nobody else wants the core.
     */
    public static final int DEFAULT_YIELDS = 64;
    /** The largest spin or yield count: a back-off must stay bounded. */
    public static final int MAX_STEPS = 1 << 20;

    private static final WaitPolicy PARK = new WaitPolicy(0, 0);
    private static final WaitPolicy DEFAULTS = new WaitPolicy(DEFAULT_SPINS, DEFAULT_YIELDS);

    private final int spins;
    private final int yields;

    private WaitPolicy(int spins, int yields) {
        this.spins = spins;
        this.yields = yields;
    }

    /**
     * {@return the policy that registers for a wake-up at once: no spinning, no yielding (lowest CPU, highest
     *          hand-off cost)}
     */
    public static WaitPolicy park() {
        return PARK;
    }

    /**
     * {@return {@code backoff(}{@value #DEFAULT_SPINS}{@code , }{@value #DEFAULT_YIELDS}{@code )}: the default
     *          of every consumer thread the user dedicates (a mailbox's {@code recv}, a publisher's executor)}
     */
    public static WaitPolicy defaults() {
        return DEFAULTS;
    }

    /**
     * A bounded back-off: up to {@code spins} {@link Thread#onSpinWait()} steps, then up to {@code yields}
     * {@link Thread#yield()} steps; then park until woken. The wait polls for a message once per burst of 16
     * spin-waits (why: the class comment, "Cost and latency") and before each yield.
     *
     * @param spins spin-wait steps, {@code 0 .. MAX_STEPS}
     * @param yields yield steps, {@code 0 .. MAX_STEPS}
     * @return the policy
     * @throws IllegalArgumentException if a count is out of range
     */
    public static WaitPolicy backoff(int spins, int yields) {
        checkSteps("spins", spins);
        checkSteps("yields", yields);
        if (spins == 0 && yields == 0) {
            return PARK;
        }
        if (spins == DEFAULT_SPINS && yields == DEFAULT_YIELDS) {
            return DEFAULTS;
        }
        return new WaitPolicy(spins, yields);
    }

    private static void checkSteps(String what, int n) {
        if (n < 0 || n > MAX_STEPS) {
            throw new IllegalArgumentException(what + ": " + n + " (expected: 0 .. " + MAX_STEPS + ")");
        }
    }

    /** {@return the spin-wait steps before the first yield} */
    public int spins() {
        return spins;
    }

    /** {@return the yield steps before the park} */
    public int yields() {
        return yields;
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o instanceof WaitPolicy other && other.spins == spins && other.yields == yields;
    }

    @Override
    public int hashCode() {
        return 31 * spins + yields;
    }

    @Override
    public String toString() {
        return spins == 0 && yields == 0 ? "WaitPolicy[park]"
                : "WaitPolicy[spins=" + spins + ", yields=" + yields + "]";
    }
}

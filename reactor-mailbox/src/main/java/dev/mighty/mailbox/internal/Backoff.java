package dev.mighty.mailbox.internal;

import dev.mighty.mailbox.WaitPolicy;

/**
 * <b>Not API</b>: the steps of a {@link WaitPolicy}'s back-off, taken by the library's waits (the consumer's data
 * wait, a producer's wait before it queues, the publisher's and the fused flux's linger). Static and stateless; any
 * thread. A policy is a value users choose; how a wait walks it is this class's business, so it is not on the
 * policy's public face.
 */
public final class Backoff {
    /** Spin-waits of {@link #idleAlways(int)} before it yields. */
    private static final int ALWAYS_SPINS = 64;

    private Backoff() {
    }

    /**
     * Spin-waits per look in a policy's spin phase: a wait looks at what it waits for (the slot, the room) once per
     * burst of this many {@link Thread#onSpinWait()}, not after each one (about 200 ns on a 12 ns spin-wait).
     * <p>Why: a consumer that looks after every spin-wait takes a busy producer's messages one at a time, and each
     * take (the slot read, the slot cleared) pulls the cache line the producer is filling back to the consumer's
     * core, so the two threads trade one line per message. Looking less often lets a line's worth of messages
     * (16 references) land first, and the line changes hands once per batch. Measured on 2 pinned vCPUs
     * (docs/benchmarks-log.md, "The spin burst"): JMH {@code mailbox_batched_recv} 34.1 and 22.3 ns/op with a look
     * per spin-wait, 15.6 and 13.0 with a look per 16; the CLI's {@code mailbox} row 29, 24, 20 against 20, 19, 18.
     * The cost: a message that lands during the spin phase is seen up to one burst later.
     */
    public static final int SPIN_BURST = 16;

    /**
     * Takes back-off step {@code step} (0-based) of {@code policy}: the policy's spin-waits in bursts of
     * {@link #SPIN_BURST} (the last burst shorter), one burst per step, then its yields, one per step. The spin-waits
     * and yields taken over all steps are exactly the policy's.
     *
     * @param step how many steps this wait has taken so far
     * @return false, taking no step, once the back-off is spent: time to park
     */
    public static boolean idle(WaitPolicy policy, int step) {
        final int spins = policy.spins();
        final int spinSteps = (spins + SPIN_BURST - 1) / SPIN_BURST; // spins <= MAX_STEPS: no overflow
        if (step < spinSteps) {
            for (int i = Math.min(SPIN_BURST, spins - step * SPIN_BURST); i > 0; i--) {
                Thread.onSpinWait();
            }
            return true;
        }
        if (step - spinSteps < policy.yields()) {
            Thread.yield();
            return true;
        }
        return false;
    }

    /** {@return whether {@code policy} parks at once (no back-off)} */
    public static boolean parksAtOnce(WaitPolicy policy) {
        return policy.spins() == 0 && policy.yields() == 0;
    }

    /**
     * One step of a wait that needs no wake-up because it ends by itself soon: a producer between its claim and its
     * publish, which publishes without waiting for anyone. Spin-waits for the first 64 steps, then yields; never
     * parks. Not for waits that may last (use a policy and a park for those).
     *
     * @param step how many steps this wait has taken so far
     */
    public static void idleAlways(int step) {
        if (step < ALWAYS_SPINS) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }
}

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
     * Takes back-off step {@code step} (0-based) of {@code policy}: a spin-wait, then yields.
     *
     * @param step how many steps this wait has taken so far
     * @return false, taking no step, once the back-off is spent: time to park
     */
    public static boolean idle(WaitPolicy policy, int step) {
        final int spins = policy.spins();
        if (step < spins) {
            Thread.onSpinWait();
            return true;
        }
        if (step - spins < policy.yields()) {
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

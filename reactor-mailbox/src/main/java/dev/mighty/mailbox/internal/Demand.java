package dev.mighty.mailbox.internal;

import java.lang.invoke.VarHandle;

/**
 * Reactive Streams demand arithmetic, capped at {@link Long#MAX_VALUE} (§3.17): the one place the adapters
 * add and subtract demand (reactor's {@code Operators.addCap}/{@code produced}, RxJava's
 * {@code BackpressureHelper}).
 *
 * <p>The atomic forms take the {@link VarHandle} of a {@code long} field and the object that declares it, as
 * reactor-core's helpers take an {@code AtomicLongFieldUpdater}. Pass a {@code static final} handle: once the
 * helper is inlined into its caller the JIT folds it like a direct access. {@code Long.MAX_VALUE} means
 * "unbounded" and is sticky: neither {@link #add} nor {@link #produced} moves a field away from it.
 *
 * <h2>Threads</h2>
 * Any thread; {@link #add} races with {@link #produced} and with itself.
 *
 * <h2>Progress</h2>
 * Lock-free: a CAS fails only because another thread changed the field.
 *
 * <h2>Visibility</h2>
 * Every update is a CAS (volatile semantics): what the requester wrote before {@code add} happens-before the
 * drain that reads the field afterwards.
 */
public final class Demand {

    private Demand() {
    }

    /**
     * @param a a non-negative amount
     * @param b a non-negative amount
     * @return {@code a + b}, or {@link Long#MAX_VALUE} if that overflows (§3.17)
     */
    public static long addCap(long a, long b) {
        final long sum = a + b;
        return sum < 0L ? Long.MAX_VALUE : sum;
    }

    /**
     * Adds {@code n >= 1} to the demand field, capped at {@link Long#MAX_VALUE}. Semantically similar to
     * {@code field = addCap(field, n)} done atomically.
     *
     * @param handle the {@code long} field's handle
     * @param owner the object that declares the field
     * @param n the amount requested, {@code >= 1}
     * @return the value before the addition (0 means the demand was exhausted until now)
     */
    public static long add(VarHandle handle, Object owner, long n) {
        for (;;) {
            final long requested = (long) handle.getVolatile(owner);
            if (requested == Long.MAX_VALUE) {
                return Long.MAX_VALUE;
            }
            if (handle.compareAndSet(owner, requested, addCap(requested, n))) {
                return requested;
            }
        }
    }

    /**
     * Subtracts {@code n} delivered messages from the demand field, unless it is {@link Long#MAX_VALUE}
     * (unbounded demand is never consumed). The drain calls it once per batch.
     *
     * @param handle the {@code long} field's handle
     * @param owner the object that declares the field
     * @param n how many were delivered, {@code 0 <= n <= field}
     * @return the value after the subtraction
     * @throws IllegalStateException if {@code n} exceeds the field: the caller delivered more than was requested
     */
    public static long produced(VarHandle handle, Object owner, long n) {
        for (;;) {
            final long requested = (long) handle.getVolatile(owner);
            if (requested == Long.MAX_VALUE) {
                return Long.MAX_VALUE;
            }
            final long update = requested - n;
            if (update < 0L) {
                throw new IllegalStateException("more produced than requested: requested=" + requested
                        + ", produced=" + n);
            }
            if (handle.compareAndSet(owner, requested, update)) {
                return update;
            }
        }
    }
}

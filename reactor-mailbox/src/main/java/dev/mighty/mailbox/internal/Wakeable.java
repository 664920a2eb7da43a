package dev.mighty.mailbox.internal;

/**
 * A waiter that is not a parked thread: an adapter's callback, run by the thread that makes the awaited
 * state change (a producer for "data arrived", the consumer for "room freed", the closer for "closed").
 *
 * <p><b>WARNING:</b> {@link #wake()} runs on a producer's or the consumer's thread, in the middle of a send
 * or receive. It must not throw and must not block; it should schedule or trampoline its work.
 */
@FunctionalInterface
public interface Wakeable {
    /** Called at most once per registration. */
    void wake();
}

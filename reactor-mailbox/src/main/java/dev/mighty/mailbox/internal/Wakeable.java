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

    /**
     * Whether a wake-up now would be used. A room waiter is woken for one freed slot; one that no longer waits (its
     * subscription was cancelled) answers false, and the mailbox gives that slot's wake-up to the next waiter
     * instead. Any thread; a racy answer is fine either way (a true that turns false wastes one wake-up, as a
     * cancel just after the wake would).
     *
     * @return true unless the waiter has given up
     */
    default boolean isWaiting() {
        return true;
    }
}

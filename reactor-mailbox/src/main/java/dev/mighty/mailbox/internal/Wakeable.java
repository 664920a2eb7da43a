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
    /**
     * Called at most once per registration (a close's and a data registration's), or once per room registration
     * that a waker took ({@link RoomTicket}); may come spuriously, so it must tolerate finding nothing to do. A
     * room waiter that is woken owns a token for one freed slot: its owner's loop spends it, keeps it by
     * registering again, or hands it on through its ticket, never by answering from here.
     */
    void wake();
}

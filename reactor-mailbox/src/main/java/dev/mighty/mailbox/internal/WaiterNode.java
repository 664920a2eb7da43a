package dev.mighty.mailbox.internal;

import java.util.concurrent.locks.LockSupport;

/** A node of a Treiber stack of waiters: a parked {@link Thread} or a {@link Wakeable}. Immutable once pushed. */
final class WaiterNode {
    final Object waiter;
    final WaiterNode next;

    WaiterNode(Object waiter, WaiterNode next) {
        this.waiter = waiter;
        this.next = next;
    }

    /** Wakes every waiter of the detached stack starting at {@code head}. */
    static void wakeAll(WaiterNode head) {
        for (WaiterNode n = head; n != null; n = n.next) {
            wake(n.waiter);
        }
    }

    static void wake(Object waiter) {
        if (waiter instanceof Thread) {
            LockSupport.unpark((Thread) waiter);
        } else if (waiter instanceof RingWaiters.StandingWaiter) {
            ((RingWaiters.StandingWaiter) waiter).owner.wake();
        } else {
            ((Wakeable) waiter).wake();
        }
    }
}

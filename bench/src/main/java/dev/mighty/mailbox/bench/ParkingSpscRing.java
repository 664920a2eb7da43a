package dev.mighty.mailbox.bench;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

import dev.mighty.mailbox.WaitPolicy;
import dev.mighty.mailbox.internal.Backoff;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.SpscArrayQueue;

/**
 * JCTools' {@link SpscArrayQueue} plus the least that a consumer which parks needs, and nothing else: the floor of
 * any single-producer queue whose consumer sleeps while it is empty (the mailbox's SPSC opt-in is one). The bare
 * {@code SpscArrayQueue} row has a consumer that never sleeps, so its producer needs no fence at all; this one
 * pays, per send, the StoreLoad fence and the waiter check without which a consumer that parks just as the last
 * message lands would sleep beside it (the Dekker pair below). It has no close, no stats and no producer side
 * wait beyond spinning and yielding while full; it is a measuring stick, not a mailbox.
 *
 * <h2>Token rule</h2>
 * The consumer registers itself in {@code waiter} (a volatile store: a StoreLoad on every JVM), then looks at the
 * queue again before it parks; a producer publishes its element, fences, then reads {@code waiter} and unparks
 * whoever is there. Either the consumer's second look sees the element or the producer sees the consumer. The
 * consumer clears {@code waiter} itself when it wakes (a spurious or an extra unpark costs one more look).
 *
 * <h2>Threads</h2>
 * {@link #send}: one producer thread; {@link #receive} and {@link #drainNow}: one consumer thread.
 */
public final class ParkingSpscRing<E> implements ParkingRing<E> {
    private static final VarHandle WAITER;

    static {
        try {
            WAITER = MethodHandles.lookup().findVarHandle(ParkingSpscRing.class, "waiter", Thread.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SpscArrayQueue<E> queue;
    private final WaitPolicy policy;
    // NOTE: read by the producer on every send, written by the consumer only around a park: a read-mostly line.
    @SuppressWarnings("unused") // through WAITER
    private volatile Thread waiter;

    /**
     * @param capacity the queue's capacity (JCTools rounds it up to a power of two)
     * @param policy   how the consumer backs off before it parks (the mailbox's rows use {@link WaitPolicy#defaults()})
     */
    public ParkingSpscRing(int capacity, WaitPolicy policy) {
        this.queue = new SpscArrayQueue<>(capacity);
        this.policy = policy;
    }

    /**
     * Offers {@code e}, waiting with {@code idle} while the queue is full, then wakes the consumer if it parks.
     *
     * @throws InterruptedException if the wait is aborted
     */
    @Override
    public void send(E e, DrivenExecutor.Idle idle) throws InterruptedException {
        for (int s = 0; !queue.offer(e); ) {
            s = idle.idle(s);
        }
        VarHandle.fullFence(); // StoreLoad: our element before the waiter check (pairs with the consumer's register)
        final Thread w = (Thread) WAITER.getOpaque(this);
        if (w != null) {
            LockSupport.unpark(w);
        }
    }

    /**
     * Drains up to {@code max} elements, backing off then parking while the queue is empty.
     *
     * @return the elements handed to {@code consumer}, at least 1
     * @throws InterruptedException if interrupted while it waits
     */
    @Override
    public int receive(MessagePassingQueue.Consumer<E> consumer, int max) throws InterruptedException {
        for (int step = 0; ; step++) {
            final int n = queue.drain(consumer, max);
            if (n > 0) {
                return n;
            }
            if (!Backoff.idle(policy, step)) { // the mailbox's own back-off: the same bursts, spins and yields
                WAITER.setVolatile(this, Thread.currentThread());
                if (queue.isEmpty()) {
                    LockSupport.park(this);
                }
                WAITER.setOpaque(this, null);
                if (Thread.interrupted()) {
                    throw new InterruptedException("aborted by the harness");
                }
            }
        }
    }

    /** Drains what is there now, without waiting. */
    @Override
    public int drainNow(MessagePassingQueue.Consumer<E> consumer) {
        return queue.drain(consumer);
    }
}

package dev.mighty.mailbox.kafka;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;

/**
 * The channel that carries a {@link KafkaShareReceiver}'s acknowledgement requests ({@code accept}, {@code release},
 * {@code reject}, {@code renew} of a {@link ReceivedShareRecord}) from any thread to the poll thread, the only
 * thread that may call the share consumer ({@code KafkaShareConsumer} is single-threaded: another thread's
 * {@code acknowledge} throws {@code ConcurrentModificationException}).
 *
 * <h2>Threads</h2>
 * {@link #requested} from any thread (through the record, at most one queue node per record per poll-thread turn:
 * the record's {@code queued} flag); {@link #take} and {@link #park} from the poll thread only; {@link #wake} from
 * any thread.
 *
 * <h2>Progress</h2>
 * {@link #requested} is lock-free (a {@code ConcurrentLinkedQueue} offer, a volatile read, at most one unpark).
 *
 * <h2>Visibility and the parking rule</h2>
 * The poll thread, waiting for the records of a poll to be settled, is woken when its wait is over, not per request:
 * when every record handed out has an outcome except those waiting in a renewal ({@link #due()}), or at once for a
 * renewal ({@link #urgent}), or by {@link #wake} (room, the close), or at its park's timeout (the flush interval).
 * A Dekker pair: the requester writes its request (the queue's offer, the count's decrement, {@code urgent}: each a
 * full fence), then reads {@link #parked}; the poll thread stores {@code parked = true} (volatile), then reads the
 * queue, the count and {@code urgent}. So either the requester sees {@code parked} and unparks the poll thread if its
 * wait is over, or the poll thread sees the request and does not park when its wait is over. The unpark's permit
 * covers the window between the poll thread's check and its park. The count only decides how soon the poll thread
 * wakes, never whether a request is applied: a wait that is not over ends at the park's timeout. What the requester
 * did before its request happens-before the poll thread's {@link #take} of it (the queue's guarantee).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class ShareAcks<K, V> {
    /** Stage of a record the consumer holds for us: it must be acknowledged before the consumer polls again. */
    static final int HELD = 0;
    /** Stage of a record whose RENEW was handed to the consumer: it is not acknowledgeable until a poll hands it back. */
    static final int RENEWING = 1;
    /** Stage of a record whose outcome was handed to the consumer (or that was given up): nothing more to do. */
    static final int DONE = 2;

    private final ConcurrentLinkedQueue<ReceivedShareRecord<K, V>> requests = new ConcurrentLinkedQueue<>();
    /** The poll thread, set once before it starts. */
    private Thread pollThread;
    /** Written by the poll thread around its park; read by requesters. */
    private volatile boolean parked;
    private static final VarHandle PARKED;
    /** Records handed out without an outcome: the poll thread adds before it sends them, an outcome's CAS takes one. */
    private volatile int unsettled;
    private static final VarHandle UNSETTLED;
    /** How many of those wait in a renewal (not held, so no poll waits for them): written by the poll thread. */
    private volatile int renewing;
    /** A renewal was requested since the poll thread's last {@link #taking()}: it goes out at once. */
    private volatile boolean urgent;

    static {
        try {
            PARKED = MethodHandles.lookup().findVarHandle(ShareAcks.class, "parked", boolean.class);
            UNSETTLED = MethodHandles.lookup().findVarHandle(ShareAcks.class, "unsettled", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Before the poll thread starts (the start is the happens-before edge to every other thread's use). */
    void pollThread(Thread thread) {
        this.pollThread = thread;
    }

    /** Any thread: {@code record} has a new request; called on its {@code queued} flag's false-to-true edge. */
    void requested(ReceivedShareRecord<K, V> record) {
        requests.offer(record);
        wakeIfOver();
    }

    /** Poll thread, before it sends {@code n} new records into the mailbox: they are unsettled until an outcome. */
    void handedOut(int n) {
        UNSETTLED.getAndAdd(this, n);
    }

    /** Any thread, once its outcome's CAS won, before it queues the record (which checks the wait then). */
    void settled() {
        UNSETTLED.getAndAdd(this, -1);
    }

    /** Any thread: a renewal was requested; the poll thread sends it at once. */
    void renewRequested() {
        urgent = true;
        wakeIfOver();
    }

    /** Poll thread: {@code n} unsettled records wait in a renewal. */
    void renewing(int n) {
        renewing = n;
    }

    /** Poll thread, before it takes the requests: a renewal requested from now on wakes it again. */
    void taking() {
        urgent = false;
    }

    /** @return whether the poll thread's wait is over: nothing unsettled but what waits in a renewal */
    private boolean due() {
        return unsettled <= renewing;
    }

    /** Any thread, after a request: unparks the poll thread if it is parked and its wait is over. */
    void wakeIfOver() {
        if ((boolean) PARKED.getVolatile(this) && (urgent || due())) { // pairs with park(): see the class comment
            LockSupport.unpark(pollThread);
        }
    }

    /** {@return the next record with a request, or null}: poll thread */
    ReceivedShareRecord<K, V> take() {
        return requests.poll();
    }

    /**
     * Poll thread: parks up to {@code nanos} unless a request is queued and its wait is over (everything settled but
     * what waits in a renewal, or a renewal requested); returns early then, and on {@link #wake}.
     */
    void park(long nanos) {
        PARKED.setVolatile(this, true);
        if (requests.isEmpty() || !(urgent || due())) {
            LockSupport.parkNanos(this, nanos);
        }
        PARKED.setRelease(this, false);
    }

    /** Any thread: makes the poll thread's current or next {@link #park} return (a close, room in the mailbox). */
    void wake() {
        final Thread thread = pollThread;
        if (thread != null) {
            LockSupport.unpark(thread);
        }
    }
}

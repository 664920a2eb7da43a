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
 * A Dekker pair: the requester offers (a CAS, a full fence), then reads {@link #parked}; the poll thread stores
 * {@code parked = true} (volatile), then reads the queue. So either the requester sees {@code parked} and unparks
 * the poll thread, or the poll thread sees the request and does not park. The unpark's permit covers the window
 * between the poll thread's check and its park. What the requester did before its request happens-before the poll
 * thread's {@link #take} of it (the queue's guarantee).
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

    static {
        try {
            PARKED = MethodHandles.lookup().findVarHandle(ShareAcks.class, "parked", boolean.class);
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
        if ((boolean) PARKED.getVolatile(this)) { // pairs with the store in park(): see the class comment
            LockSupport.unpark(pollThread);
        }
    }

    /** {@return the next record with a request, or null}: poll thread */
    ReceivedShareRecord<K, V> take() {
        return requests.poll();
    }

    /** Poll thread: parks up to {@code nanos} unless a request is queued; returns early on {@link #wake}. */
    void park(long nanos) {
        PARKED.setVolatile(this, true);
        if (requests.isEmpty()) {
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

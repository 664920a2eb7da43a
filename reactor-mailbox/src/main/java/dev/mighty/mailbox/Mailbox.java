package dev.mighty.mailbox;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * A bounded mailbox: any number of producers (one, if built {@link MailboxBuilder#singleProducer()
 * single-producer}) send messages to exactly one consumer, in FIFO order per producer.
 *
 * <h2>Threads</h2>
 * Any thread may call the send methods ({@code trySend}, {@code send}, {@code trySendMany}, {@code sendMany}),
 * {@link #close()},
 * {@link #closeExceptionally(Throwable)} and the read-only methods ({@code isClosed}, {@code isTerminated},
 * {@code closeCause}, {@code capacity}, {@code size}, {@code stats}). The receive methods ({@code tryRecv},
 * {@code recv}, {@code tryRecvMany}, {@code recvMany}) may be called by <b>one consumer at a time</b>:
 * the caller must hand the consumer role from one thread to the next with its own happens-before edge
 * (a {@code MailboxPublisher} subscription does this for its subscribers). A single-producer mailbox also
 * requires that at most one thread sends at a time.
 *
 * <h2>Progress</h2>
 * {@code trySend}, {@code tryRecv} and {@code tryRecvMany} are lock-free (a producer may retry its claim
 * when another producer wins the same slot; the consumer never waits for a lock). {@code send} parks while
 * the mailbox is full and {@code recv}/{@code recvMany} park while it is empty: after a short bounded spin
 * the thread parks with {@link java.util.concurrent.locks.LockSupport}, and no thread ever spins endlessly.
 * A producer pays for a wake-up only on the empty&rarr;non-empty edge while the consumer is parked, and the
 * consumer only when a producer is parked on a full mailbox. A batched send ({@code trySendMany},
 * {@code sendMany}) pays one atomic claim per run instead of one per message.
 *
 * <h2>Visibility</h2>
 * Everything a producer wrote before a successful send happens-before the consumer's receipt of that
 * message. {@code close()} happens-before a receive that returns end of stream.
 *
 * <h2>Capacity and reservations</h2>
 * The capacity is rounded up to a power of two, between 1 and 2<sup>30</sup>. "Full" means occupied plus
 * reserved: the Kafka bridge's receiver ({@code reactor-mailbox-kafka}) reserves a poll's room before it polls.
 *
 * <p><b>Note:</b> {@code trySend} may therefore answer {@code false} while {@link #size()} is below
 * {@link #capacity()}.
 *
 * <h2>Close</h2>
 * Close is linearizable with sends: a send racing {@code close()} either fails with
 * {@link MailboxClosedException} or its message is received before end of stream. A batched send claims its
 * run with one atomic step, so a run is admitted whole before the close or refused whole after it. What was sent before
 * the close stays receivable; end of stream is reported once the mailbox is closed and drained.
 *
 * <p>This interface is sealed: the adapters rely on hooks inside the implementations.
 *
 * @param <T> the message type; {@code null} is never a message
 */
public sealed interface Mailbox<T> extends AutoCloseable permits ArrayMailbox, FrameMailbox {

    /**
     * Sends without waiting.
     *
     * @param msg the message
     * @return {@code true} if admitted, {@code false} if the mailbox is full (occupied + reserved)
     * @throws NullPointerException if {@code msg} is null
     * @throws MailboxClosedException if the mailbox is closed
     */
    boolean trySend(T msg);

    /**
     * Sends without waiting and without throwing on a full or closed mailbox: as {@link #trySend(Object)}, with the
     * closed case as a result instead of a {@link MailboxClosedException}. Counted as {@code trySend} counts
     * ({@link MailboxStats}: a {@link SendResult#FULL} as refused, a {@link SendResult#CLOSED} as rejected closed).
     * Lock-free; allocates nothing.
     * <pre>{@code
     * switch (mailbox.offer(msg)) {
     *     case OK:     break;
     *     case FULL:   retryLater(msg); break;
     *     case CLOSED: shutdownPath(msg); break;
     * }
     * }</pre>
     *
     * @param msg the message
     * @return {@link SendResult#OK} if admitted, {@link SendResult#FULL} if the mailbox is full (occupied +
     *         reserved), {@link SendResult#CLOSED} if it is closed
     * @throws NullPointerException if {@code msg} is null
     */
    SendResult offer(T msg);

    /**
     * Sends, parking while the mailbox is full.
     *
     * @param msg the message
     * @throws NullPointerException if {@code msg} is null
     * @throws InterruptedException if the thread is interrupted on entry or while parked; nothing is admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before the message is admitted
     * @throws IllegalStateException if called from the thread that is currently this mailbox's consumer while
     *         the mailbox is full: that thread is the only one that can make room, so it would wait forever
     */
    void send(T msg) throws InterruptedException;

    /**
     * Sends, parking at most {@code timeout} while the mailbox is full. From inside the consumer's own receive
     * on a full mailbox it waits out its timeout like any other caller (a timeout of 146 years or more counts as
     * none, and then throws as {@link #send(Object)} does).
     *
     * @param msg the message
     * @param timeout the longest wait for room; {@link Duration#ZERO} tries once, as {@link #trySend} does
     * @return {@code true} if admitted, {@code false} if the timeout elapsed first
     * @throws NullPointerException if {@code msg} or {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative
     * @throws InterruptedException if the thread is interrupted on entry or while parked; nothing is admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before the message is admitted
     */
    boolean send(T msg, Duration timeout) throws InterruptedException;

    /**
     * Sends the run {@code batch.get(from) .. batch.get(to - 1)} without waiting: as many of its messages as the
     * mailbox has room for, in order, claimed with <b>one</b> atomic step. The caller keeps the rest (send them
     * later from {@code from + returned}). Semantically similar to:
     * <pre>{@code
     * int n = 0;
     * while (from + n < to && trySend(batch.get(from + n))) {
     *     n++;
     * }
     * return n;
     * }</pre>
     * but every element is checked before anything is admitted, the run is admitted whole before a
     * {@code close()} or refused whole after it, it is contiguous (no other producer's message falls inside it),
     * and the consumer is woken at most once. FIFO with the caller's other sends. Elements are read with
     * {@code get(i)}, twice (checked, then stored): pass a {@link java.util.RandomAccess} list (an
     * {@code ArrayList}, a {@code List.of}) and do not change it during the call.
     *
     * <p>A poll loop that keeps what did not fit:
     * <pre>{@code
     * List<Rec> polled = ...;
     * int sent = 0;
     * sent += mailbox.trySendMany(polled, sent, polled.size());   // later, again from 'sent'
     * }</pre>
     *
     * @param batch the messages
     * @param from  the first index of the run, inclusive
     * @param to    the last index of the run, exclusive
     * @return how many were admitted, {@code batch.get(from)} first: {@code 0 .. to - from}; 0 when the mailbox is
     *         full (occupied + reserved) or the run is empty
     * @throws NullPointerException if {@code batch} or an element of the run is null; nothing is admitted
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.size()}
     * @throws IllegalArgumentException if {@code from > to}
     * @throws MailboxClosedException if the mailbox is closed and the run is not empty; nothing is admitted
     */
    int trySendMany(List<? extends T> batch, int from, int to);

    /**
     * As {@link #trySendMany(List, int, int)}, for the whole list.
     *
     * @param batch the messages
     * @return how many were admitted, {@code batch.get(0)} first
     * @throws NullPointerException if {@code batch} or an element is null; nothing is admitted
     * @throws MailboxClosedException if the mailbox is closed and the list is not empty; nothing is admitted
     */
    default int trySendMany(List<? extends T> batch) {
        return trySendMany(batch, 0, Objects.requireNonNull(batch, "batch").size());
    }

    /**
     * As {@link #trySendMany(List, int, int)}, from {@code batch[from .. to)}.
     *
     * @param batch the messages
     * @param from  the first index of the run, inclusive
     * @param to    the last index of the run, exclusive
     * @return how many were admitted, {@code batch[from]} first: {@code 0 .. to - from}
     * @throws NullPointerException if {@code batch} or an element of the run is null; nothing is admitted
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.length}
     * @throws IllegalArgumentException if {@code from > to}
     * @throws MailboxClosedException if the mailbox is closed and the run is not empty; nothing is admitted
     */
    int trySendMany(T[] batch, int from, int to);

    /**
     * Sends the run {@code batch.get(from) .. batch.get(to - 1)}, parking while the mailbox is full, until all of
     * it is admitted: each claim takes as much of the rest as fits, with one atomic step. Semantically similar to
     * a loop of {@link #send(Object)}, with the checks and the claims of {@link #trySendMany(List, int, int)}.
     * Another producer's messages may fall between two of the claims (never inside one).
     *
     * @param batch the messages
     * @param from  the first index of the run, inclusive
     * @param to    the last index of the run, exclusive
     * @return {@code to - from}; fewer only if the mailbox was closed, or the thread interrupted, after part of
     *         the run was admitted: the return says how much, the interrupt flag is set again, and the next send
     *         throws
     * @throws NullPointerException if {@code batch} or an element of the run is null; nothing is admitted
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.size()}
     * @throws IllegalArgumentException if {@code from > to}
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the run
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the run is admitted
     * @throws IllegalStateException if called from the thread that is currently this mailbox's consumer while
     *         the mailbox is full (part of the run may have been admitted): it would wait forever
     */
    int sendMany(List<? extends T> batch, int from, int to) throws InterruptedException;

    /**
     * As {@link #sendMany(List, int, int)}, for the whole list.
     *
     * @param batch the messages
     * @return how many were admitted, {@code batch.get(0)} first
     * @throws NullPointerException if {@code batch} or an element is null; nothing is admitted
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the list
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the list is admitted
     */
    default int sendMany(List<? extends T> batch) throws InterruptedException {
        return sendMany(batch, 0, Objects.requireNonNull(batch, "batch").size());
    }

    /**
     * As {@link #sendMany(List, int, int)}, from {@code batch[from .. to)}.
     *
     * @param batch the messages
     * @param from  the first index of the run, inclusive
     * @param to    the last index of the run, exclusive
     * @return {@code to - from}, or fewer as for {@link #sendMany(List, int, int)}
     * @throws NullPointerException if {@code batch} or an element of the run is null; nothing is admitted
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.length}
     * @throws IllegalArgumentException if {@code from > to}
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the run
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the run is admitted
     */
    int sendMany(T[] batch, int from, int to) throws InterruptedException;

    /**
     * As {@link #sendMany(List, int, int)}, parking at most {@code timeout} in all.
     *
     * @param batch   the messages
     * @param from    the first index of the run, inclusive
     * @param to      the last index of the run, exclusive
     * @param timeout the longest wait for room, in all
     * @return how many were admitted: fewer than {@code to - from} also if the timeout elapsed first
     * @throws NullPointerException if {@code batch}, an element of the run or {@code timeout} is null
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.size()}
     * @throws IllegalArgumentException if {@code from > to} or {@code timeout} is negative
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the run
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the run is admitted
     */
    int sendMany(List<? extends T> batch, int from, int to, Duration timeout) throws InterruptedException;

    /**
     * As {@link #sendMany(List, int, int, Duration)}, from {@code batch[from .. to)}.
     *
     * @param batch   the messages
     * @param from    the first index of the run, inclusive
     * @param to      the last index of the run, exclusive
     * @param timeout the longest wait for room, in all
     * @return how many were admitted: fewer than {@code to - from} also if the timeout elapsed first
     * @throws NullPointerException if {@code batch}, an element of the run or {@code timeout} is null
     * @throws IndexOutOfBoundsException if {@code from < 0} or {@code to > batch.length}
     * @throws IllegalArgumentException if {@code from > to} or {@code timeout} is negative
     * @throws InterruptedException if the thread is interrupted on entry, or while parked before any of the run
     *         was admitted
     * @throws MailboxClosedException if the mailbox is or becomes closed before any of the run is admitted
     */
    int sendMany(T[] batch, int from, int to, Duration timeout) throws InterruptedException;

    /**
     * Receives without waiting. Consumer only.
     *
     * @return the oldest message, or {@code null} if there is none now (empty, or closed and drained)
     */
    @Nullable T tryRecv();

    /**
     * Receives, parking while the mailbox is empty. Consumer only.
     *
     * @return the oldest message, or {@code null} once the mailbox is closed normally and drained
     * @throws InterruptedException if the thread is interrupted on entry or while parked
     * @throws MailboxClosedException (with the cause) once the mailbox was closed exceptionally and is drained
     */
    @Nullable T recv() throws InterruptedException;

    /**
     * Receives, parking at most {@code timeout} while the mailbox is empty. Consumer only.
     *
     * @param timeout the longest wait for a message; with {@link Duration#ZERO} the receive still spins briefly
     *                (as every receive does before it parks) but never parks
     * @return the oldest message, or {@code null} on timeout or at end of stream ({@link #isTerminated()}
     *         tells which)
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative
     * @throws InterruptedException if the thread is interrupted on entry or while parked
     * @throws MailboxClosedException (with the cause) once the mailbox was closed exceptionally and is drained
     */
    @Nullable T recv(Duration timeout) throws InterruptedException;

    /**
     * Hands up to {@code max} of the messages present now to {@code sink}, oldest first. Consumer only.
     * Semantically similar to:
     * <pre>{@code
     * int n = 0;
     * for (T m; n < max && (m = tryRecv()) != null; n++) {
     *     sink.accept(m);
     * }
     * return n;
     * }</pre>
     * but the wake-up check for parked producers is paid once per call, not once per message.
     *
     * <p><b>WARNING:</b> {@code sink} should not throw. If it does, the message it was given counts as
     * received, the exception propagates, and the messages after it stay in the mailbox.
     *
     * @param sink receives each message, on the calling thread
     * @param max the most messages to hand over; {@code >= 0}
     * @return how many messages were handed over: 0 when empty, also once closed and drained (end of stream is
     *         not reported here, not even after {@link #closeExceptionally}; {@link #isTerminated()} tells which)
     * @throws NullPointerException if {@code sink} is null
     * @throws IllegalArgumentException if {@code max} is negative
     */
    int tryRecvMany(Consumer<? super T> sink, int max);

    /**
     * Parks until at least one message is present, then behaves as {@link #tryRecvMany}. Consumer only;
     * the batched receive of an actor loop.
     *
     * @param sink receives each message, on the calling thread; see the <b>WARNING</b> of {@link #tryRecvMany}
     * @param max the most messages to hand over; {@code >= 0}
     * @return how many messages were handed over; 0 only once the mailbox is closed normally and drained
     *         (or when {@code max} is 0)
     * @throws NullPointerException if {@code sink} is null
     * @throws IllegalArgumentException if {@code max} is negative
     * @throws InterruptedException if the thread is interrupted on entry or while parked
     * @throws MailboxClosedException (with the cause) once the mailbox was closed exceptionally and is drained
     */
    int recvMany(Consumer<? super T> sink, int max) throws InterruptedException;

    /**
     * Closes the mailbox. Idempotent. Sends fail from now on; what was sent stays receivable. Wakes every
     * parked sender (they get {@link MailboxClosedException}) and the parked receiver. Throws nothing, so a
     * mailbox can be the resource of a {@code try}-with-resources block.
     */
    @Override
    void close();

    /**
     * Closes as {@link #close()} does, recording {@code cause}: once drained, {@code recv()} throws
     * {@code MailboxClosedException(cause)} and a {@code MailboxPublisher} signals {@code onError(cause)}.
     * The first close wins; a later call changes nothing.
     *
     * @param cause the failure the consumer is told about once it has drained the mailbox
     * @throws NullPointerException if {@code cause} is null
     */
    void closeExceptionally(Throwable cause);

    /** {@return whether {@code close} or {@code closeExceptionally} was called} */
    boolean isClosed();

    /** {@return whether the mailbox is closed and every admitted message has been received} */
    boolean isTerminated();

    /** {@return the cause given to {@code closeExceptionally}, or {@code null}} */
    @Nullable Throwable closeCause();

    /** {@return the capacity, a power of two} */
    int capacity();

    /**
     * {@return the number of admitted, not yet received messages (a snapshot; exact only when quiescent)}
     * Slots reserved but not yet used are not counted.
     */
    int size();

    /** {@return a snapshot of this mailbox's counters; cheap, derived from state the mailbox keeps anyway} */
    MailboxStats stats();

    /**
     * Starts a new high-water window, e.g. once per metrics interval: {@link MailboxStats#highWaterMark()} becomes
     * the current size and rises from there. Any thread.
     *
     * @return the high-water mark before the reset (since the previous reset, or since creation)
     */
    int resetHighWaterMark();
}

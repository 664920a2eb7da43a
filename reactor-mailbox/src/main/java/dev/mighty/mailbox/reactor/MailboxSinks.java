package dev.mighty.mailbox.reactor;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import reactor.core.publisher.Sinks;

/**
 * A drop-in for Reactor's {@code Sinks.many().unicast()} that any number of threads may emit into at once: a
 * {@link Sinks.Many} over a bounded {@link Mailbox}, whose {@link Sinks.Many#asFlux() asFlux()} is the mailbox's
 * fused {@link MailboxFlux}.
 *
 * <pre>{@code
 * // before: Sinks.Many<Event> sink = Sinks.many().unicast().onBackpressureBuffer(Queues.<Event>get(1024).get());
 * Sinks.Many<Event> sink = MailboxSinks.many(1024);
 * sink.tryEmitNext(event);                 // from any thread, concurrently: OK, FAIL_OVERFLOW or FAIL_TERMINATED
 * sink.asFlux().publishOn(Schedulers.boundedElastic()).subscribe(this::handle);
 * }</pre>
 *
 * <h2>What the sink answers</h2>
 * <ul>
 *     <li>{@code tryEmitNext}: {@code OK} when the mailbox admitted the value, {@code FAIL_OVERFLOW} when it is full
 *     (occupied + reserved), {@code FAIL_TERMINATED} once {@code tryEmitComplete}/{@code tryEmitError} succeeded or
 *     the mailbox was closed by anyone. <b>Never {@code FAIL_NON_SERIALIZED}</b>: the mailbox takes many producers,
 *     so no emission needs a lock or a retry because of another emitter. Never {@code FAIL_ZERO_SUBSCRIBER} or
 *     {@code FAIL_CANCELLED} either: values are buffered (up to the capacity) until a subscriber takes them.
 *     {@code null} is a {@link NullPointerException}.</li>
 *     <li>{@code tryEmitComplete} closes the mailbox, {@code tryEmitError(e)} closes it with
 *     {@code closeExceptionally(e)}: the subscriber receives what was buffered, then {@code onComplete} or
 *     {@code onError(e)}; later emissions get {@code FAIL_TERMINATED}. Of concurrent terminal emissions exactly one
 *     succeeds.</li>
 *     <li>{@code emitNext}, {@code emitComplete}, {@code emitError}: Reactor's own failure-handler loop. A result
 *     the handler does not retry is handled as Reactor's sinks do: {@code FAIL_OVERFLOW} discards the value
 *     ({@code Operators.onDiscard}) and errors the sink with {@code Exceptions.failWithOverflow}; {@code
 *     FAIL_TERMINATED} drops the value ({@code Operators.onNextDropped}) or the error
 *     ({@code Operators.onErrorDropped}); a failed {@code emitComplete} does nothing. These hooks see the
 *     context of the current subscriber, or the empty context when there is none. A retrying handler
 *     ({@code busyLooping}) makes {@code emitNext} spin on a full mailbox: a producer that may wait should call
 *     {@code mailbox.send(..)} instead (below).</li>
 * </ul>
 *
 * <h2>Subscribers and cancel: where it differs from Reactor's unicast sink</h2>
 * One live subscriber at a time (a second one gets {@code onSubscribe} then {@code onError(IllegalStateException)},
 * as Reactor's unicast sink does). Reactor's sink is done once its subscriber cancels (emissions then get
 * {@code FAIL_CANCELLED}, the buffer is discarded). This sink is not: what the cancelled subscriber had not taken
 * stays in the mailbox, emissions keep being buffered (and get {@code FAIL_OVERFLOW} once it is full), and a
 * <b>later subscriber resumes</b> where the first stopped. {@link Sinks.Many#currentSubscriberCount()} is 1 while
 * a subscriber holds the mailbox (any face: {@code MailboxFlux}, {@code MailboxPublisher}), else 0.
 *
 * <h2>Mixing with the mailbox</h2>
 * The sink is a view: the mailbox stays usable. A producer that should <em>wait</em> for room (a virtual thread,
 * blocking code) calls {@link Mailbox#send(Object)} on the same mailbox while others call {@code tryEmitNext};
 * a {@code Mono} that waits without blocking is {@link MailboxMonos#send(Mailbox, Object)}. {@code mailbox.close()}
 * terminates the sink as {@code tryEmitComplete} does.
 *
 * <h2>Threads</h2>
 * Every method of the sink: any thread, concurrently. {@code asFlux()} is subscribed as a {@link MailboxFlux}; its
 * signals run where {@code MailboxFlux} says (fused: the downstream polls on its own thread). The failure handler
 * and the Reactor hooks run on the emitting thread.
 *
 * <h2>Progress</h2>
 * {@code tryEmitNext}, {@code tryEmitComplete}, {@code tryEmitError} and {@code currentSubscriberCount}: lock-free
 * ({@code tryEmitNext} is one claim and one publish, as {@code trySend}, and allocates nothing). {@code emit*}: as
 * long as the handler keeps retrying.
 *
 * <h2>Visibility</h2>
 * What a thread wrote before a successful {@code tryEmitNext} happens-before the delivery of that value; a
 * successful terminal emission happens-before the terminal signal.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> {@code FAIL_OVERFLOW} may come while {@code BUFFERED} is below {@code CAPACITY}: "full" counts slots
 * a producer has claimed and not yet published, and slots reserved through the mailbox's internal reservations
 * (the Kafka receiver reserves a poll's room before it polls; a {@code MailboxSubscriber} reserves nothing). <b>Note:</b> a {@code tryEmitNext} racing a terminal
 * emission may still succeed: it is then ordered before it, and delivered before the terminal signal.
 *
 * <h2>Scannable</h2>
 * {@code NAME} (the mailbox's name), {@code CAPACITY}, {@code BUFFERED} (the mailbox's size), {@code TERMINATED}
 * (a terminal emission succeeded or the mailbox is closed), {@code ERROR} (the close cause), {@code CANCELLED}
 * (always false: nothing cancels the sink), {@code ACTUAL} (the current subscriber, if a {@code MailboxFlux}
 * holds the mailbox). {@code stepName()} names the mailbox too.
 */
public final class MailboxSinks {
    private MailboxSinks() {
    }

    /**
     * A unicast sink over {@code mailbox}; see the class comment.
     *
     * @param <T> the value type
     * @param mailbox the mailbox the sink emits into; it may be sent to and closed directly too
     * @return a sink whose {@code asFlux()} is {@code MailboxFlux.from(mailbox)}
     * @throws NullPointerException if {@code mailbox} is null
     */
    public static <T> Sinks.Many<T> many(Mailbox<T> mailbox) {
        return new MailboxSinkMany<>(mailbox);
    }

    /**
     * A unicast sink over a new {@code Mailboxes.bounded(capacity)}.
     *
     * @param <T> the value type
     * @param capacity the most values buffered, rounded up to a power of two; {@code 1 .. 2^30}
     * @return a sink whose {@code asFlux()} is the fused flux of its mailbox
     * @throws IllegalArgumentException if {@code capacity} is out of range
     */
    public static <T> Sinks.Many<T> many(int capacity) {
        return new MailboxSinkMany<>(Mailboxes.<T>bounded(capacity));
    }
}

package dev.mighty.mailbox.reactor;

import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.internal.MailboxRing;
import reactor.core.publisher.Mono;

/**
 * A mailbox's lifecycle as {@code Mono}s, for pipelines that must not block: wait for room without parking a
 * thread ({@link #send}), and wait for the end of the stream ({@link #terminated}).
 *
 * <pre>{@code
 * Flux.fromIterable(requests)
 *     .concatMap(r -> MailboxMonos.send(mailbox, r))      // waits for room without blocking: BlockHound-safe
 *     .then(Mono.fromRunnable(mailbox::close))
 *     .then(MailboxMonos.terminated(mailbox))             // completes once the consumer has drained it
 *     .subscribe();
 * }</pre>
 *
 * <h2>Threads</h2>
 * Subscribe and cancel from any thread. A {@code Mono} that cannot finish at once registers a wake-up with the
 * mailbox and returns; it then finishes on the thread that made the awaited change: a consumer's receive that freed
 * room or drained the mailbox (for a {@code MailboxFlux}, the thread that polls), or the thread that closed it.
 * Move heavy work off that thread ({@code publishOn}); a blocking call there holds up the consumer.
 *
 * <h2>Progress</h2>
 * Lock-free: subscribing makes one attempt and at most a registration; nothing parks, nothing spins while it waits.
 * A wake-up that finds nothing changed (wake-ups may be spurious) registers again.
 *
 * <h2>Visibility</h2>
 * A {@code send} completes after its message was admitted: what the sender wrote before subscribing
 * happens-before the consumer's receipt. {@code terminated} completes after the last receive: everything the
 * consumer did before that receive happens-before {@code onComplete}.
 *
 * <h2>Relaxations</h2>
 * <b>Note:</b> a {@code Mono} cancelled while it waits stays registered (a small node that references its
 * subscription, and so its subscriber and, for {@code send}, the message) until the mailbox's next wake-up of that
 * kind: for {@code send} the next receive that frees room or the close, for {@code terminated} the close (then the
 * next receive). The wake-up then finds it cancelled and does nothing. Subscribing and cancelling
 * {@code terminated} in a loop on a mailbox that never closes therefore grows its close-listener list: subscribe
 * once and share the {@code Mono} ({@code cache()}) instead.
 *
 * <h2>Spec rules</h2>
 * §1.9 ({@code subscribe(null)} is a {@code NullPointerException}), §3.9 ({@code request(n <= 0)} is
 * {@code onError(IllegalArgumentException)}); {@code onComplete}/{@code onError} need no demand. Signals are
 * delivered at most once each and never concurrently (§1.3, §1.7); an exception a subscriber throws from one
 * goes to {@code Operators.onErrorDropped} (§2.13: it must not reach the mailbox's thread).
 */
public final class MailboxMonos {
    private MailboxMonos() {
    }

    /**
     * A {@code Mono} that sends {@code msg} into {@code mailbox} when it has room, without blocking a thread: the
     * non-blocking {@link Mailbox#send(Object)}. Cold: each subscription sends the message once.
     * <ul>
     *     <li>Completes once the message was admitted (at once if there is room).</li>
     *     <li>Fails with {@link MailboxClosedException} (its cause: the close's cause, if any) if the mailbox is or
     *     becomes closed before the message was admitted; then nothing was admitted.</li>
     *     <li>A cancel before admission sends nothing; a cancel that races the admission may find the message
     *     already in the mailbox. Either way the message is never lost inside the {@code Mono}: it is admitted,
     *     or it was never taken.</li>
     * </ul>
     * Each attempt is a {@link Mailbox#offer(Object)}: one that finds the mailbox full counts as refused in
     * {@link Mailbox#stats()}. Unlike {@code send}, subscribing from the consumer's own thread is fine: the wait
     * holds no thread, so the consumer keeps making room.
     *
     * @param <T> the message type
     * @param mailbox the mailbox to send into
     * @param msg the message
     * @return a {@code Mono<Void>} that completes when {@code msg} is admitted
     * @throws NullPointerException if an argument is null
     */
    public static <T> Mono<Void> send(Mailbox<T> mailbox, T msg) {
        final MailboxRing<T> ring = MailboxRing.of(mailbox);
        Objects.requireNonNull(msg, "msg");
        return MailboxSendMono.create(ring, msg);
    }

    /**
     * A {@code Mono} that completes once {@code mailbox} is closed and drained ({@link Mailbox#isTerminated()}),
     * or fails with the cause given to {@link Mailbox#closeExceptionally(Throwable)} (the cause itself, as a
     * {@code MailboxFlux} subscriber sees it), once drained. Completes at once if it is terminated already.
     * Waiting costs the mailbox nothing until it closes; from the close until the end, one re-registration per
     * receive batch.
     * <p>
     * Drained means the consumer has <em>taken</em> every message, not that it has finished with them: a fused
     * {@code publishOn} polls the last message and then hands it to its subscriber, so this {@code Mono} may
     * complete while that {@code onNext} is still running. To know the subscriber has seen everything, wait for
     * its own {@code onComplete}.
     *
     * @param mailbox the mailbox to watch; any consumer face may drain it
     * @return a {@code Mono<Void>} of the mailbox's end
     * @throws NullPointerException if {@code mailbox} is null
     */
    public static Mono<Void> terminated(Mailbox<?> mailbox) {
        return MailboxTerminatedMono.create(MailboxRing.of(mailbox));
    }
}

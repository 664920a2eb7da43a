package dev.mighty.mailbox.internal;

/**
 * What a {@link MailboxFeed} tells the adapter built on it ({@code MailboxFlux.sendAll}) about the messages its
 * upstream delivered. Not API.
 *
 * <p><b>WARNING:</b> both methods run on the feed's threads (the upstream's signal thread, or the loop's: a
 * consumer's or a closer's thread, in the middle of a receive or a close). They must not throw and must not
 * block.
 */
public interface FeedListener {
    /** A listener that does nothing. */
    FeedListener NONE = (closedUnder, dropped, error) -> {
    };

    /**
     * A message the upstream delivered that will never be admitted: the mailbox closed under the feed (the message
     * is then counted in {@code rejectedClosed}), or the feed quit (a message the mailbox rejects, an upstream that
     * broke §1.1). Called once per such message, before or after {@link #finished}.
     *
     * @param message the message
     */
    default void discarded(Object message) {
    }

    /**
     * Called once, when the feed will admit nothing more. When {@code closedUnder} is false and {@code error} is
     * null, the upstream completed and every message it delivered was admitted, and the mailbox was closed first if
     * the feed closes on completion: a success means the messages are in.
     *
     * @param closedUnder the mailbox was closed by someone else before everything the upstream delivered was in
     * @param dropped buffered messages dropped so far because of that close
     * @param error the upstream's error, or why the feed quit (a rejected message, a broken rule); null otherwise
     */
    void finished(boolean closedUnder, long dropped, Throwable error);
}

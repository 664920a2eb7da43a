package dev.mighty.mailbox.internal;

/**
 * A party that wants the consumer role of a mailbox: a {@code MailboxPublisher} or {@code MailboxFlux}
 * subscription. See {@link MailboxRing#attachConsumer(ConsumerRole)}.
 *
 * <p>{@link #wake()} is called (once) when a queued role is handed the consumer role by its cancelled
 * predecessor; it runs on the predecessor's thread, possibly before {@code attachConsumer} has returned
 * {@code ROLE_QUEUED} to the newcomer, and should schedule or trampoline the drain.
 *
 * <p>Rule for implementations: whenever a holder's drain exits and finds the role cancelled (including a
 * role that was cancelled while queued and then handed the role), it calls
 * {@link MailboxRing#detachConsumer(ConsumerRole)}; otherwise the mailbox keeps a dead holder.
 */
public interface ConsumerRole extends Wakeable {
    /** @return whether this role has been given up (the subscription was cancelled or terminated) */
    boolean isCancelled();
}

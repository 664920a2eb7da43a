/**
 * Micrometer meters for mailboxes: {@link dev.mighty.mailbox.micrometer.MailboxMetrics}. {@code micrometer-core}
 * is an optional dependency: only this package uses it, and a mailbox works without it on the class path.
 */
package dev.mighty.mailbox.micrometer;

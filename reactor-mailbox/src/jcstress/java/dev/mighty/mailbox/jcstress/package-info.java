/**
 * The jcstress suite of the waiting, reservation, close and consumer-role protocols: one {@code <Subject>Stress}
 * class per subject, one nested {@code @JCStressTest} per race. Every outcome says in words which interleaving
 * produces it; every outcome that breaks the mailbox's contract is {@code FORBIDDEN}.
 *
 * <p>Built by {@code mvn -Pjcstress -DskipTests package} into {@code reactor-mailbox/target/jcstress.jar}; run
 * with {@code java -jar reactor-mailbox/target/jcstress.jar -m sanity} (docs/reliability.md, "jcstress"). The tests
 * use the public API only ({@code Mailbox}, {@code Mailboxes}, and {@code MailboxRing.of(mailbox)} for the adapter
 * hooks), so they hold whatever the internals look like.
 */
package dev.mighty.mailbox.jcstress;

/**
 * Reactive Streams adapters for a {@link dev.mighty.mailbox.Mailbox}; they depend on
 * {@code org.reactivestreams} only.
 * <ul>
 *     <li>{@link dev.mighty.mailbox.rs.MailboxPublisher}: the receive side as a {@code Publisher}; demand is
 *     served by batched receives; one subscriber at a time; nothing taken out of the mailbox is lost on
 *     cancel.</li>
 *     <li>{@link dev.mighty.mailbox.rs.MailboxSubscriber}: the send side as a {@code Subscriber}; {@code onNext}
 *     never blocks or drops (a message that finds the mailbox full waits in a buffer of {@code prefetch}
 *     slots), and an idle upstream holds no room, so several may share a mailbox.</li>
 *     <li>{@link dev.mighty.mailbox.rs.MailboxProcessor}: both over one mailbox.</li>
 * </ul>
 * JDK {@code java.util.concurrent.Flow} users go through {@code org.reactivestreams.FlowAdapters}.
 */
@NullMarked
package dev.mighty.mailbox.rs;

import org.jspecify.annotations.NullMarked;

/**
 * Reactor glue for a {@link dev.mighty.mailbox.Mailbox}; {@code reactor-core} is an <b>optional</b> dependency
 * of this library and only this package needs it.
 * <ul>
 *     <li>{@link dev.mighty.mailbox.reactor.MailboxFlux#from(dev.mighty.mailbox.Mailbox)}: the receive side as
 *     a {@code Flux} with ASYNC queue fusion, so {@code publishOn}, {@code concatMap} and {@code flatMap} poll
 *     the mailbox directly and leave what they did not take in it when cancelled.</li>
 *     <li>{@link dev.mighty.mailbox.reactor.MailboxFlux#sendAll(org.reactivestreams.Publisher,
 *     dev.mighty.mailbox.Mailbox)}: the send side as a {@code Mono<Void>} that completes once the source
 *     completed and every element was admitted.</li>
 *     <li>{@link dev.mighty.mailbox.reactor.MailboxSinks#many(dev.mighty.mailbox.Mailbox)}: a unicast
 *     {@code Sinks.Many} over a mailbox that any number of threads may emit into at once (never
 *     {@code FAIL_NON_SERIALIZED}); its {@code asFlux()} is the fused flux.</li>
 *     <li>{@link dev.mighty.mailbox.reactor.MailboxMonos}: a send that waits for room without blocking a thread,
 *     and the end of the stream, as {@code Mono<Void>}s.</li>
 * </ul>
 * Conventions: values dropped by a sink go to {@code Operators.onDiscard}/{@code onNextDropped}, undeliverable
 * errors to {@code Operators.onErrorDropped}; {@code Scannable.Attr.NAME} is the mailbox's name.
 * Recipes: {@code docs/usage.md}.
 */
@NullMarked
package dev.mighty.mailbox.reactor;

import org.jspecify.annotations.NullMarked;

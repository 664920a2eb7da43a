/**
 * Internal machinery of the mailbox: the padded ring core, the slot storage helpers, the wait logic
 * and the demand arithmetic used by the adapters. <b>Not API; may change in any release.</b> The module exports
 * it to one module only, the Kafka bridge ({@code dev.mighty.mailbox.kafka}), whose poll loop waits for mailbox room
 * through {@link dev.mighty.mailbox.internal.MailboxRing} until a public room-registration API replaces that.
 *
 * <h2>Accessor prefixes</h2>
 * Field accessors follow the JCTools {@code queues/package-info.java} convention, so the code reads like
 * the JCTools code it learns from:
 * <ul>
 *     <li>{@code lvX} getVolatile &middot; {@code laX} getAcquire &middot; {@code lpX} plain read</li>
 *     <li>{@code svX} setVolatile &middot; {@code soX} setRelease &middot; {@code spX} plain write</li>
 *     <li>{@code casX} compareAndSet &middot; {@code xchgX} getAndSet &middot; {@code xaddX} getAndAdd</li>
 * </ul>
 * Every VarHandle is declared in the class that declares its field, on the line after the field, named
 * after the field in UPPER_SNAKE. No class here touches {@code sun.misc.Unsafe} (a test checks it).
 *
 * <p>The shared fields, their writers, readers and access modes are listed in {@code docs/memory-ordering.md}.
 */
package dev.mighty.mailbox.internal;

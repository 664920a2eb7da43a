/**
 * The bounded mailbox: {@link dev.mighty.mailbox.Mailbox} (many producers, one consumer), its slab variant
 * {@link dev.mighty.mailbox.FrameMailbox}, and their factories {@link dev.mighty.mailbox.Mailboxes}.
 *
 * <p>Null-marked ({@code @NullMarked}, JSpecify): a type without {@code @Nullable} excludes {@code null}, here
 * and in the other API packages; {@code @Nullable} marks each place where {@code null} is meant.
 */
@NullMarked
package dev.mighty.mailbox;

import org.jspecify.annotations.NullMarked;

/**
 * The bounded mailbox: {@link dev.mighty.mailbox.Mailbox} (many producers, one consumer), its slab variant
 * {@link dev.mighty.mailbox.FrameMailbox}, and their factories {@link dev.mighty.mailbox.Mailboxes}.
 */
package dev.mighty.mailbox;

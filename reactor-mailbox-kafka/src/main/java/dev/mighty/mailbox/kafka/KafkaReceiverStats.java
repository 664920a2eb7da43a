package dev.mighty.mailbox.kafka;

import java.time.Duration;

/**
 * A snapshot of a {@link KafkaMailboxReceiver}'s figures, from {@link KafkaMailboxReceiver#stats()}: what the poll
 * thread knew at its last refresh. The poll thread makes a new snapshot at a turn at least 100 ms after the previous
 * one (a turn comes before each poll, and
 * at least every {@code pollTimeout} while paused), after each commit it completes, and when it finishes; it
 * publishes it with one volatile store, so the figures of one snapshot are one cut of the poll thread's state.
 * <p><b>Note:</b> acknowledgements come from other threads while the poll thread counts: {@code unacknowledged} and
 * {@code oldestUnacknowledgedNanos} are racy by design (an acknowledgement made during or after the count shows at
 * the next refresh), so they are as of the refresh, not of the read. The consumer's figures ({@code lag}) are as of
 * its last fetch.
 *
 * @param groupId                   the consumer group ({@code group.id})
 * @param topics                    the topics, comma-separated (the pattern of a pattern subscription; the topics of
 *                                  a manual assignment)
 * @param assignedPartitions        partitions assigned to the receiver now (0 once closed)
 * @param pausedPartitions          assigned partitions paused now: all of them while the mailbox has no room for a
 *                                  poll ({@link KafkaMailboxReceiver#paused()}), else those at the bound
 * @param partitionsAtBound         partitions paused because their unacknowledged records reached
 *                                  {@link KafkaMailboxReceiver.Builder#maxUnacknowledged}
 * @param unacknowledged            records delivered into the mailbox and not yet acknowledged, over the assigned
 *                                  partitions (exact at the refresh: counted from each partition's ledger, whose
 *                                  stale records, of revoked assignments, no longer count); in the mailbox, or in the
 *                                  application's hands
 * @param oldestUnacknowledgedNanos how long the oldest unacknowledged record (over all partitions) has been the
 *                                  oldest of its partition, at the refresh, or 0 (as
 *                                  {@link KafkaMailboxReceiver#oldestUnacknowledgedAge()})
 * @param lag                       records in the log past the consumer's position, summed over the assigned
 *                                  partitions whose lag the consumer knows (its fetch metric {@code records-lag}:
 *                                  the high watermark, or under {@code read_committed} the last stable offset, of
 *                                  the partition's last fetch, minus the position; read from the consumer's
 *                                  metrics, no request, at most once a second); -1 if it knows none.
 *                                  Records the receiver already polled (pending, in the mailbox, unacknowledged) are
 *                                  not in it. A paused partition is not fetched, so its lag stays as of its last
 *                                  fetch while it is paused
 * @param commits                   commits that succeeded (periodic {@code commitAsync}, and {@code commitSync} on
 *                                  revocation and close), one per commit request whatever its partitions
 * @param failedCommits             commits that failed (an error of {@code commitAsync}'s callback, a
 *                                  {@code commitSync} that failed after its retries or because the group rebalanced)
 * @param commitNanos               the total time of the commits that succeeded, from the call to its completion on
 *                                  the poll thread (for {@code commitAsync} that includes the wait for the poll
 *                                  thread's next {@code poll}, which runs its callback; for {@code commitSync}, its
 *                                  retries)
 * @param failedCommitNanos         the total time of the commits that failed, measured the same way
 * @param lastCommitNanos           the time of the last commit completed (either way), or 0
 */
public record KafkaReceiverStats(
        String groupId,
        String topics,
        int assignedPartitions,
        int pausedPartitions,
        int partitionsAtBound,
        long unacknowledged,
        long oldestUnacknowledgedNanos,
        long lag,
        long commits,
        long failedCommits,
        long commitNanos,
        long failedCommitNanos,
        long lastCommitNanos) {

    /** {@return {@link #oldestUnacknowledgedNanos} as a {@code Duration}} */
    public Duration oldestUnacknowledgedAge() {
        return Duration.ofNanos(oldestUnacknowledgedNanos);
    }

    /** @return the same snapshot with other commit figures (poll thread) */
    KafkaReceiverStats withCommits(long commits, long failedCommits, long commitNanos, long failedCommitNanos,
            long lastCommitNanos) {
        return new KafkaReceiverStats(groupId, topics, assignedPartitions, pausedPartitions, partitionsAtBound,
                unacknowledged, oldestUnacknowledgedNanos, lag, commits, failedCommits, commitNanos,
                failedCommitNanos, lastCommitNanos);
    }
}

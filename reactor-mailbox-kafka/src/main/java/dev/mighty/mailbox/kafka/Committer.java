package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The receiver's commits of what is acknowledged: the periodic asynchronous commit ({@link #commitIfDue}), the
 * synchronous one of a revocation, a close or a fatal error ({@link #commitSync}), and the hook of commit waiters
 * ({@link #commitSoon}, {@link ReceivedRecord#commit()}). This is the seam of the commit policy: the loop, the
 * rebalance handling and the close commit only through it.
 * <p>Threads: {@link #commitSoon} any thread (the acknowledging one); everything else the poll thread, and so do the
 * commit callbacks (inside a later {@code poll}). Progress: {@code commitSoon} off the poll thread is wait-free (a
 * volatile store); {@link #commitSync} blocks, bounded by its timeout. Visibility: {@link #commitRequested} is a
 * volatile flag: a {@code commitSoon} before the poll thread's next check is seen by it.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class Committer<K, V> implements PartitionAcks.CommitRequests {
    static final int COMMIT_ATTEMPTS = 3;
    /** The default of {@link #commitFailureGraceNanos}. */
    static final long COMMIT_FAILURE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** The bound of a commit made inside a rebalance (and of a commit made now for a waiter on the poll thread). */
    static final Duration REVOCATION_COMMIT_TIMEOUT = Duration.ofSeconds(10);

    /** Rounds of poll-then-commit when the final commit found the group rebalancing. */
    private static final int FINAL_COMMIT_ROUNDS = 3;
    /** One poll of those rounds, every partition paused. */
    private static final Duration REBALANCE_POLL = Duration.ofMillis(200);
    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());

    private final org.apache.kafka.clients.consumer.Consumer<K, V> consumer;
    private final String label;
    private final long commitIntervalNanos;
    private final Thread pollThread;
    /** Where a fatal error of a commit callback goes, rethrown after the poll that ran it. */
    private final DeferredFailure callbackFailure;
    private final ReceiverStatsCell stats;
    /**
     * How long periodic commits (and polls: N12) may fail with a non-retriable error before that is fatal:
     * {@link #COMMIT_FAILURE_GRACE_NANOS} unless a test shortens it (not API, no builder knob). Read by the poll thread.
     */
    volatile long commitFailureGraceNanos = COMMIT_FAILURE_GRACE_NANOS;
    /**
     * Set before the poll thread starts (so its start publishes it) when the offsets go into producer transactions
     * ({@code receiveExactlyOnce}): the consumer then commits nothing itself, and the waits of a revocation and a
     * close wait for the open transaction instead of for acknowledgements.
     */
    private TransactionBarrier transactions;
    /** The last synchronous commit failed with RebalanceInProgressException (a poll completes it). Poll thread. */
    private boolean rebalancing;
    /** Set by any thread that wants a commit soon ({@link ReceivedRecord#commitAsync()}); cleared by the poll thread. */
    private volatile boolean commitRequested;
    // ---- poll thread only
    /** When the periodic commits began to fail with a non-retriable error, or 0. */
    private long commitFailingSince;
    private long lastCommit;

    Committer(org.apache.kafka.clients.consumer.Consumer<K, V> consumer, String label, long commitIntervalNanos,
            Thread pollThread, DeferredFailure callbackFailure, ReceiverStatsCell stats) {
        this.consumer = consumer;
        this.label = label;
        this.commitIntervalNanos = commitIntervalNanos;
        this.pollThread = pollThread;
        this.callbackFailure = callbackFailure;
        this.stats = stats;
    }

    /** Before the poll thread starts: the offsets go into {@code barrier}'s transactions from now on. */
    void transactional(TransactionBarrier barrier) {
        this.transactions = barrier;
    }

    /** The poll timeout while a transaction is open: its barrier waits for the poll thread's next turn. */
    private static final Duration OPEN_TRANSACTION_POLL = Duration.ofMillis(1);

    /**
     * @return the timeout of the next poll: {@code pollTimeout}, or a short one while a transaction is open, whose
     *         barrier (a consumer task) would otherwise wait for a poll on an idle partition to time out. Not
     *         {@code consumer.wakeup()}: a wake-up lands in the next blocking consumer call, which may be a user's
     *         listener's. Poll thread.
     */
    Duration pollTimeout(Duration pollTimeout) {
        final TransactionBarrier t = transactions;
        return t != null && t.isOpen() && OPEN_TRANSACTION_POLL.compareTo(pollTimeout) < 0 ? OPEN_TRANSACTION_POLL
                : pollTimeout;
    }

    /** @return whether the offsets go into producer transactions */
    boolean isTransactional() {
        return transactions != null;
    }

    /**
     * The close's wait, before its final commit: for the records handed out to be acknowledged (N7: not those still
     * in the mailbox, which nobody may take any more), or, under transactions, for the open one to end. Poll thread.
     */
    void awaitBeforeClose(Ledgers ledgers, long deadline, LongSupplier inMailbox) {
        if (transactions != null) {
            transactions.awaitIdle(deadline);
        } else {
            ledgers.awaitHandedOutAcknowledged(deadline, inMailbox);
        }
    }

    /** Poll thread, once before the loop: the commit interval counts from {@code now}. */
    void start(long now) {
        lastCommit = now;
    }

    /**
     * Poll thread, at the end of each turn: the periodic commit of {@code ledgers} if the interval passed or a commit
     * was requested.
     */
    void commitIfDue(Collection<PartitionAcks> ledgers) {
        if (transactions != null) {
            return; // the offsets go into the transactions
        }
        if (commitRequested || System.nanoTime() - lastCommit >= commitIntervalNanos) {
            commitRequested = false;
            commitAsync(ledgers);
            lastCommit = System.nanoTime();
        }
    }

    /**
     * A commit waiter was queued: the poll thread commits at its next turn. Asked on the poll thread itself (a
     * listener, {@code doOnConsumer}, {@code receive(Schedulers.immediate())}), a wait for the next turn would wait
     * for this very thread ({@code commit().block()} deadlocked, N6): it commits now, synchronously, and a waiter the
     * commit does not cover (records before it not acknowledged yet) fails at once, saying why.
     */
    @Override
    public void commitSoon(PartitionAcks ledger, CompletableFuture<Void> done) {
        if (transactions != null) {
            done.completeExceptionally(new UnsupportedOperationException("commit() under receiveExactlyOnce: the"
                    + " offsets go into the transactions"));
            return;
        }
        if (Thread.currentThread() != pollThread) {
            commitRequested = true;
            return;
        }
        try {
            commitSync(List.of(ledger), REVOCATION_COMMIT_TIMEOUT);
            ledger.completeCovered();
        } catch (RuntimeException e) {
            done.completeExceptionally(e);
            return;
        }
        if (!done.isDone()) {
            done.completeExceptionally(new IllegalStateException("commit() on the receiver's poll thread of a record "
                    + "that records delivered before it, not acknowledged yet, keep from being committed: only this "
                    + "thread could deliver the commit later, so it would wait for itself: partition="
                    + ledger.partition + ", committed=" + ledger.committed));
        }
    }

    /**
     * Inside a revocation, before {@link #commitSync} of {@code revoked}: waits, until {@code deadline}, for their
     * delivered records to be acknowledged. Poll thread.
     */
    void beforeRevocation(Collection<PartitionAcks> revoked, long deadline) {
        if (transactions != null) {
            transactions.awaitIdle(deadline); // the open transaction commits (or aborts) before the partitions go
            return;
        }
        Ledgers.awaitAcknowledged(revoked, deadline);
    }

    /** @return for each ledger in {@code which} whose offset moved, that offset (with the ledger, by partition) */
    private static Map<TopicPartition, OffsetAndMetadata> movedOffsets(Collection<PartitionAcks> which) {
        final Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (PartitionAcks ledger : which) {
            final long offset = ledger.commitOffset();
            if (offset >= 0 && offset != ledger.committed) {
                // with the leader epoch of the last record covered: the group's next owner validates its position
                // against the log with it (truncation after an unclean leader change is detected, not skipped)
                offsets.put(ledger.partition, new OffsetAndMetadata(offset, ledger.commitEpoch(), ""));
            }
        }
        return offsets;
    }

    /** Marks the ledgers of {@code which} committed up to {@code offsets}. Poll thread. */
    private static void committed(Collection<PartitionAcks> which, Map<TopicPartition, OffsetAndMetadata> offsets) {
        for (PartitionAcks ledger : which) {
            final OffsetAndMetadata committed = offsets.get(ledger.partition);
            if (committed != null && !ledger.isRevoked()) {
                ledger.committed(committed.offset());
            }
        }
    }

    /**
     * The periodic commit: asynchronous, so the poll thread goes on polling; its callback runs on the poll thread
     * inside a later poll. A failure is logged and the next turn commits again (the offsets only grow); a
     * non-retriable one that lasts {@code commitFailureGraceNanos} (30 s; tests shorten it) is fatal: the failing
     * commit's error, raised on the poll thread after the poll that ran its callback, once the first failure of the
     * run (the first since the last successful periodic commit) is that old. Authorization errors get that grace, in
     * case the ACL is being fixed.
     */
    void commitAsync(Collection<PartitionAcks> ledgers) {
        final List<PartitionAcks> which = new ArrayList<>(ledgers);
        for (PartitionAcks ledger : which) {
            ledger.completeCovered(); // a commit() whose record an earlier commit covered completes now (N3)
        }
        final Map<TopicPartition, OffsetAndMetadata> offsets = movedOffsets(which);
        if (offsets.isEmpty()) {
            return;
        }
        final long start = System.nanoTime();
        consumer.commitAsync(offsets, (done, error) -> {
            stats.commitDone(error == null, System.nanoTime() - start);
            if (error == null) {
                commitFailingSince = 0L;
                committed(which, offsets);
            } else if (error instanceof RetriableException || error instanceof CommitFailedException
                    || error instanceof RebalanceInProgressException) {
                LOG.log(Level.INFO, "receiver {0}: a periodic commit failed ({1}); the next one retries", label,
                        error.toString());
            } else {
                final long now = System.nanoTime();
                final long grace = commitFailureGraceNanos;
                if (commitFailingSince == 0L) {
                    commitFailingSince = now;
                }
                if (now - commitFailingSince >= grace) {
                    callbackFailure.set(error instanceof RuntimeException ? (RuntimeException) error
                            : new IllegalStateException(error));
                } else {
                    LOG.log(Level.WARNING, "receiver {0}: a periodic commit failed ({1}); retrying for up to {2} s"
                            + " before that is fatal", label, error.toString(),
                            TimeUnit.NANOSECONDS.toSeconds(grace));
                }
            }
        });
    }

    /** Commits synchronously, bounded by {@code timeout}, for each ledger whose offset moved. Poll thread. */
    void commitSync(Collection<PartitionAcks> which, Duration timeout) {
        if (which.isEmpty() || transactions != null) {
            return;
        }
        final Map<TopicPartition, OffsetAndMetadata> offsets = movedOffsets(which);
        if (offsets.isEmpty()) {
            return;
        }
        final long start = System.nanoTime();
        final boolean done;
        try {
            done = commitSyncWithRetries(offsets, timeout);
        } catch (RuntimeException e) {
            stats.commitDone(false, System.nanoTime() - start);
            throw e;
        }
        stats.commitDone(done, System.nanoTime() - start);
        if (done) {
            committed(which, offsets);
        }
    }

    /** @return false if the commit failed because of a rebalance (not fatal); throws what is fatal */
    private boolean commitSyncWithRetries(Map<TopicPartition, OffsetAndMetadata> offsets, Duration timeout) {
        rebalancing = false;
        final long deadline = System.nanoTime() + ReceiverLifecycle.saturatedNanos(timeout);
        for (int attempt = 1; ; attempt++) {
            final long remaining = Math.max(deadline - System.nanoTime(), 0L);
            try {
                consumer.commitSync(offsets, Duration.ofNanos(remaining));
                return true;
            } catch (WakeupException e) {
                // close() woke a commit instead of a poll: the wake-up is spent; commit again
                if (attempt >= COMMIT_ATTEMPTS + 1) {
                    throw e;
                }
            } catch (CommitFailedException | RebalanceInProgressException e) {
                LOG.log(Level.INFO, "receiver {0}: a commit failed because the group rebalanced ({1}); the"
                        + " partitions' next owners get the records again", label, e.toString());
                rebalancing = e instanceof RebalanceInProgressException; // still under way: a poll completes it
                return false; // the group moved on: the next owner gets the records again
            } catch (RetriableException e) {
                if (attempt >= COMMIT_ATTEMPTS || System.nanoTime() - deadline >= 0) {
                    LOG.log(Level.WARNING, "receiver {0}: a commit failed after {1} attempts ({2})", label, attempt,
                            e.toString());
                    throw e;
                }
                LockSupport.parkNanos(this, Math.min(TimeUnit.MILLISECONDS.toNanos(50L << attempt),
                        Math.max(deadline - System.nanoTime(), 0L))); // back off before the next attempt
            }
        }
    }

    /**
     * The final commit failed because the group is rebalancing ({@code RebalanceInProgressException}; a
     * {@code CommitFailedException}, whose generation is gone, is not retried): a member joined while this one closes,
     * and under {@code CooperativeStickyAssignor} the rebalance needs this member's polls to complete. As Kafka's error
     * says: poll, with every partition paused, so the rebalance completes (a revocation in it commits what it takes,
     * the ledgers being still here), then commit what is left; a few rounds, within the deadline, keeping time for the
     * consumer's close. Without it the records acknowledged since the last commit went to the next owner again.
     * Poll thread, at the finish.
     */
    void completeRebalanceAndCommit(Ledgers ledgers, long deadline) {
        for (int round = 0; round < FINAL_COMMIT_ROUNDS && rebalancing && !movedOffsets(ledgers.all()).isEmpty();
                round++) {
            if (deadline - System.nanoTime() < ReceiverLifecycle.FINISH_RESERVE_NANOS / 5) {
                return; // keep time for the consumer's close
            }
            try {
                consumer.pause(consumer.assignment());
                consumer.poll(REBALANCE_POLL); // records a new assignment fetches are not delivered
                consumer.pause(consumer.assignment());
            } catch (WakeupException e) {
                // the close's own wake-up, if no poll met it yet
            }
            callbackFailure.rethrow(); // a revocation commit that failed in that poll
            commitSync(new ArrayList<>(ledgers.all()), ReceiverLoop.remaining(deadline));
        }
    }
}

package dev.mighty.mailbox.kafka;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.function.BiConsumer;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;

/**
 * The receiver's rebalance handling: makes a partition's ledger when it is assigned (a new epoch); on revocation waits
 * up to {@code revocationTimeout} for its delivered records to be acknowledged, commits what is (through the
 * {@link Committer}) and ends its ledger; a lost partition ends without a commit. Then calls the user's listener.
 * <p>Threads: runs inside {@code poll} (or the consumer's {@code close}), on the poll thread only, as does everything
 * it touches. A fatal error goes to the {@link DeferredFailure}, rethrown once the poll returns. Progress: blocking,
 * bounded (the wait for acknowledgements, a bounded {@code commitSync}, the user's listener).
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class RebalanceHandler<K, V> implements ConsumerRebalanceListener {
    private static final Logger LOG = System.getLogger(KafkaMailboxReceiver.class.getName());

    private final ReceiverSettings<K, V> settings;
    private final org.apache.kafka.clients.consumer.Consumer<K, V> consumer;
    private final Ledgers ledgers;
    private final Committer<K, V> committer;
    private final Admission<?> admission;
    private final ReceiverLifecycle lifecycle;
    private final DeferredFailure callbackFailure;

    RebalanceHandler(ReceiverSettings<K, V> settings, org.apache.kafka.clients.consumer.Consumer<K, V> consumer,
            Ledgers ledgers, Committer<K, V> committer, Admission<?> admission, ReceiverLifecycle lifecycle,
            DeferredFailure callbackFailure) {
        this.settings = settings;
        this.consumer = consumer;
        this.ledgers = ledgers;
        this.committer = committer;
        this.admission = admission;
        this.lifecycle = lifecycle;
        this.callbackFailure = callbackFailure;
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        if (!partitions.isEmpty()) {
            LOG.log(Level.INFO, "receiver {0}: assigned {1}", settings.label, partitions);
        }
        for (TopicPartition partition : partitions) {
            ledgers.newLedger(partition); // an old ledger (a reassignment we did not see revoked) ends
        }
        callUser(settings.onAssigned, partitions); // e.g. a seek: the new ledgers are empty, so any position is fine
        if (admission.paused() && !partitions.isEmpty()) {
            consumer.pause(partitions); // no records past our reservations: paused like the others
        }
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        final List<PartitionAcks> revoked = new ArrayList<>(partitions.size());
        for (TopicPartition partition : partitions) {
            final PartitionAcks ledger = ledgers.get(partition);
            if (ledger != null) {
                revoked.add(ledger);
            }
        }
        if (!partitions.isEmpty()) {
            LOG.log(Level.INFO, "receiver {0}: revoked {1}", settings.label, partitions);
        }
        if (!revoked.isEmpty() && !lifecycle.isHalted()) {
            committer.beforeRevocation(revoked, System.nanoTime() + settings.revocationTimeoutNanos);
            try {
                committer.commitSync(revoked, Committer.REVOCATION_COMMIT_TIMEOUT);
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, () -> "receiver " + settings.label + ": the commit on revocation failed", e);
                callbackFailure.set(e); // fatal: rethrown once poll returns
            }
        }
        ledgers.endAssignment(partitions);
        callUser(settings.onRevoked, partitions);
    }

    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
        LOG.log(Level.WARNING, "receiver {0}: lost {1} (no commit: another member may own them already)",
                settings.label, partitions);
        ledgers.endAssignment(partitions); // another member may own them already: commit nothing
        // N11: to onLost if given; else to onRevoked, as Kafka's own default onPartitionsLost does
        callUser(settings.onLost != null ? settings.onLost : settings.onRevoked, partitions);
    }

    /** A user listener's failure is fatal, rethrown once the poll returns. */
    private void callUser(BiConsumer<? super org.apache.kafka.clients.consumer.Consumer<K, V>,
            ? super Collection<TopicPartition>> listener, Collection<TopicPartition> partitions) {
        if (listener == null || partitions.isEmpty()) {
            return;
        }
        try {
            listener.accept(consumer, partitions);
        } catch (WakeupException e) {
            if (lifecycle.isRunning()) {
                callbackFailure.set(e); // not ours: someone else woke the consumer
            } else {
                // N5: our close's wake-up, met by the listener's own consumer call: a wake-up, not a failure
                LOG.log(Level.DEBUG, "receiver {0}: a listener met the close's wake-up", settings.label);
            }
        } catch (RuntimeException e) {
            callbackFailure.set(e);
        }
    }
}

package dev.mighty.mailbox.kafka;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;

/**
 * A consumer thread for a receiver's mailbox ({@code recvMany}), recording every record it takes: how often each
 * (partition, offset) came, whether per-partition order held, and how its stream ended. Tests read the
 * counters while it runs (thread-safe snapshots) and everything after {@link #join()}.
 */
final class RecordSink {
    private final Thread thread;
    private final Map<Long, Integer> deliveries = new HashMap<>(); // guarded by this
    private final Map<String, Long> lastOffset = new HashMap<>();   // consumer thread only
    private final List<ReceivedRecord<String, String>> taken = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger count = new AtomicInteger();
    private final AtomicInteger outOfOrder = new AtomicInteger();
    private final AtomicReference<Throwable> end = new AtomicReference<>();
    private volatile boolean ended;
    private final boolean keep;

    /**
     * @param action run on each record on the consumer thread (acknowledge, sleep, ...)
     * @param keep whether to keep every record taken (for checks on the records themselves)
     */
    RecordSink(String name, Mailbox<ReceivedRecord<String, String>> mailbox,
            Consumer<ReceivedRecord<String, String>> action, boolean keep) {
        this.keep = keep;
        this.thread = new Thread(() -> {
            try {
                while (mailbox.recvMany(r -> {
                    take(r);
                    action.accept(r);
                }, 64) > 0) {
                    // until closed and drained
                }
            } catch (MailboxClosedException e) {
                end.set(e);
            } catch (Throwable t) {
                end.set(t);
            } finally {
                ended = true;
            }
        }, name);
        thread.setDaemon(true);
    }

    RecordSink start() {
        thread.start();
        return this;
    }

    private void take(ReceivedRecord<String, String> r) {
        final int partition = r.record().partition();
        final long offset = r.record().offset();
        synchronized (this) {
            deliveries.merge(KafkaTestSupport.key(partition, offset), 1, Integer::sum);
        }
        // within one assignment epoch a partition's records come in offset order; a new epoch may go back
        final Long last = lastOffset.put(partition + "/" + r.assignmentEpoch(), offset);
        if (last != null && offset <= last) {
            outOfOrder.incrementAndGet();
        }
        if (keep) {
            taken.add(r);
        }
        count.incrementAndGet();
    }

    int count() {
        return count.get();
    }

    boolean ended() {
        return ended;
    }

    /** @return a copy of how many times each (partition, offset) was taken */
    synchronized Map<Long, Integer> deliveries() {
        return new HashMap<>(deliveries);
    }

    synchronized boolean has(int partition, long offset) {
        return deliveries.containsKey(KafkaTestSupport.key(partition, offset));
    }

    int outOfOrder() {
        return outOfOrder.get();
    }

    List<ReceivedRecord<String, String>> taken() {
        synchronized (taken) {
            return new ArrayList<>(taken);
        }
    }

    /** @return how the stream ended: null for a normal end of stream */
    Throwable end() {
        return end.get();
    }

    /** Waits (bounded) for the end of stream; fails if it does not come. */
    void join() throws InterruptedException {
        thread.join(TimeUnit.SECONDS.toMillis(30));
        if (thread.isAlive()) {
            throw new AssertionError("consumer thread " + thread.getName() + " did not end: count=" + count());
        }
    }
}

package dev.mighty.mailbox.bench;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.QueueOfferResult;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The JVM's actor runtime as a comparator: Apache Pekko's inbox, in the two forms a Pekko user would pick for
 * "one producer, one consumer". Both consume on Pekko's threads (the default dispatcher, a fork-join pool), not
 * on the benchmark's consumer thread: that is where a Pekko user's actor runs.
 * <ul>
 *   <li>{@link #actor}: a typed actor on the default dispatcher with the default mailbox, the producer
 *       {@code tell}s. The default mailbox is unbounded (a {@code ConcurrentLinkedQueue}), so this row pays nothing
 *       for backpressure: {@code tell} never waits. Pekko's bounded mailboxes either block the sender on a
 *       {@code LinkedBlockingQueue} ({@code mailbox-push-timeout-time}) or, once that times out, drop the message
 *       to dead letters; Pekko's documentation steers users to Streams for backpressure instead, hence:
 *   <li>{@link #sourceQueue}: {@code Source.queue(capacity)} (a {@link BoundedSourceQueue}) into
 *       {@code Sink.foreach}, materialized on the default dispatcher. {@code offer} answers at once;
 *       {@code dropped} means full, and the producer waits with the caller's {@link DrivenExecutor.Idle} and
 *       offers again.
 * </ul>
 * Messages are {@code Integer}s; batch after batch the consumer side must receive exactly {@code 0 .. n-1} in
 * order ({@link #completedBatches()}, {@link #checkFailure()}).
 *
 * <h2>Threads</h2>
 * {@link #send} and {@link #close} are called by one producer thread; {@link #completedBatches()} and
 * {@link #checkFailure()} by any thread. The check runs inside the actor (or the stream's fused stage), which
 * Pekko runs on one thread at a time with a happens-before edge between consecutive messages.
 *
 * <h2>Visibility</h2>
 * The check's counters are single-writer (the actor); it publishes a finished batch with a volatile store of
 * {@code completed} after recording any mismatch in the volatile {@code failure} and the time of the batch's last
 * message, so a reader that sees the batch count also sees both.
 */
public final class PekkoInbox implements AutoCloseable {
    /** Pekko's own logging at WARNING, no dead-letter logging, no JVM shutdown hook: a quiet comparator. */
    private static final String CONFIG = String.join("\n",
            "pekko.loglevel = WARNING",
            "pekko.stdout-loglevel = WARNING",
            "pekko.log-dead-letters = off",
            "pekko.log-dead-letters-during-shutdown = off",
            "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off",
            "pekko.jvm-exit-on-fatal-error = off");

    private final ActorSystem<Void> system;
    private final Check check;
    private final ActorRef<Integer> actor;
    private final BoundedSourceQueue<Integer> queue;

    private PekkoInbox(ActorSystem<Void> system, Check check, ActorRef<Integer> actor,
            BoundedSourceQueue<Integer> queue) {
        this.system = system;
        this.check = check;
        this.actor = actor;
        this.queue = queue;
    }

    /**
     * A typed actor on the default dispatcher and the default (unbounded) mailbox.
     *
     * @param name  the actor system's name (letters, digits, '-' and '_')
     * @param batch messages per batch: the check expects {@code 0 .. batch-1}, again and again
     */
    public static PekkoInbox actor(String name, int batch) {
        final Check check = new Check(name, batch);
        final Behavior<Integer> inbox = Behaviors.receive(Integer.class)
                .onMessage(Integer.class, value -> {
                    check.accept(value);
                    return Behaviors.same();
                })
                .build();
        final CompletableFuture<ActorRef<Integer>> ref = new CompletableFuture<>();
        final ActorSystem<Void> system = ActorSystem.create(Behaviors.<Void>setup(context -> {
            ref.complete(context.spawn(inbox, "inbox")); // default dispatcher, default mailbox
            return Behaviors.empty();
        }), name, config());
        try {
            return new PekkoInbox(system, check, ref.get(30, TimeUnit.SECONDS), null);
        } catch (Exception e) {
            system.terminate();
            throw new IllegalStateException(name + ": the actor did not start", e);
        }
    }

    /**
     * {@code Source.queue(capacity)} into {@code Sink.foreach}, materialized on the default dispatcher.
     *
     * @param name     the actor system's name (letters, digits, '-' and '_')
     * @param capacity the queue's bound
     * @param batch    messages per batch: the check expects {@code 0 .. batch-1}, again and again
     */
    public static PekkoInbox sourceQueue(String name, int capacity, int batch) {
        final Check check = new Check(name, batch);
        final ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), name, config());
        try {
            final BoundedSourceQueue<Integer> queue = Source.<Integer>queue(capacity)
                    .to(Sink.foreach(check::accept))
                    .run(system);
            return new PekkoInbox(system, check, null, queue);
        } catch (RuntimeException e) {
            system.terminate();
            throw e;
        }
    }

    private static Config config() {
        return ConfigFactory.parseString(CONFIG); // Pekko falls back on its reference.conf
    }

    /**
     * Sends {@code payload[0 .. n-1]}: {@code tell}, or {@code offer} until enqueued (waiting with {@code idle}
     * while the queue answers {@code dropped}). Producer thread.
     *
     * @throws IllegalStateException if the queue is closed or failed
     */
    public void send(Integer[] payload, int n, DrivenExecutor.Idle idle) throws InterruptedException {
        final ActorRef<Integer> actor = this.actor;
        if (actor != null) {
            for (int i = 0; i < n; i++) {
                actor.tell(payload[i]);
            }
            return;
        }
        final BoundedSourceQueue<Integer> queue = this.queue;
        final QueueOfferResult enqueued = QueueOfferResult.enqueued();
        final QueueOfferResult dropped = QueueOfferResult.dropped();
        for (int i = 0; i < n; i++) {
            QueueOfferResult result;
            for (int spins = 0; (result = queue.offer(payload[i])) != enqueued; ) {
                if (result != dropped) {
                    throw new IllegalStateException(check.name + ": offer: " + result);
                }
                spins = idle.idle(spins);
            }
        }
    }

    /** @return how many batches the consumer side has received completely (any thread) */
    public int completedBatches() {
        return check.completed;
    }

    /**
     * @return {@link System#nanoTime()} when the consumer side received the last message of the latest completed
     *         batch (read it after {@link #completedBatches()} showed that batch)
     */
    public long lastBatchEndNanos() {
        return check.lastNanos;
    }

    /** @throws IllegalStateException if a batch did not receive exactly {@code 0 .. batch-1} in order */
    public void checkFailure() {
        final String failure = check.failure;
        if (failure != null) {
            throw new IllegalStateException(failure);
        }
    }

    /** Completes the queue and terminates the actor system (waits up to 10 s). Producer thread. */
    @Override
    public void close() {
        if (queue != null) {
            queue.complete();
        }
        system.terminate();
        try {
            system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // a slow shutdown does not change what was measured
        }
    }

    /** The order check, run by the actor (one thread at a time). */
    static final class Check {
        final String name;
        private final int batch;
        private int received;
        /** Written before the volatile store of {@code completed} that publishes it. */
        private long lastNanos;
        volatile int completed;
        volatile String failure;

        Check(String name, int batch) {
            this.name = Objects.requireNonNull(name, "name");
            if (batch < 1) {
                throw new IllegalArgumentException("batch: " + batch + " (expected: >= 1)");
            }
            this.batch = batch;
        }

        void accept(Integer value) {
            final int v = value.intValue();
            if (v != received && failure == null) {
                failure = name + ": batch " + completed + ": firstMismatch: index=" + received + " value=" + v;
            }
            if (++received == batch) {
                lastNanos = System.nanoTime();
                received = 0;
                completed = completed + 1; // single writer: the actor
            }
        }
    }
}

package dev.mighty.mailbox.bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;

/**
 * A crowd of producers blocked on one small bounded channel, drained in batches by one consumer: the shape of
 * issue 18's crowd goals, shared by the CLI's {@code crowd_*} rows and {@code CrowdBenchmark}. One
 * {@link #runOnce()} is one whole crowd: every producer sends its own {@code perProducer} messages with the
 * channel's blocking send (mailbox {@code send}, {@code ArrayBlockingQueue.put}), and the calling thread receives
 * them all (mailbox {@code recvMany(batch)}; {@code ArrayBlockingQueue} {@code take} then {@code drainTo(batch - 1)})
 * and checks the count and each producer's order.
 *
 * <p>{@link Shape#VIRTUAL_10K} starts 10,000 virtual threads per crowd (thread creation is part of the time, for
 * both channels); virtual threads exist on JDK 21+ only, and the bench compiles for 17, so they are made through
 * {@code Thread.ofVirtual().factory()} found reflectively ({@link #virtualThreads()} is null on 17).
 * {@link Shape#PLATFORM_64} keeps 64 platform threads for the crowd's lifetime and lets them go together through a
 * barrier for each run.
 *
 * <p>Threads: {@link #open}, {@link #runOnce}, {@link #producerParks} and {@link #close} on one thread (the
 * consumer); the producers on their own.
 */
public final class Crowd implements AutoCloseable {
    /** Messages each platform producer sends per crowd: an iteration of a few to tens of milliseconds. */
    public static final int PLATFORM_MESSAGES = 50;

    /** The crowds of issue 18's goals. */
    public enum Shape {
        /** 10,000 virtual-thread producers × 10 messages into capacity 64 (JDK 21+). */
        VIRTUAL_10K(10_000, 10, 64, true),
        /** 64 platform producer threads × {@value #PLATFORM_MESSAGES} messages into capacity 8. */
        PLATFORM_64(64, PLATFORM_MESSAGES, 8, false);

        public final int producers;
        public final int perProducer;
        public final int capacity;
        public final boolean virtual;

        Shape(int producers, int perProducer, int capacity, boolean virtual) {
            this.producers = producers;
            this.perProducer = perProducer;
            this.capacity = capacity;
            this.virtual = virtual;
        }

        public int messages() {
            return producers * perProducer;
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%,d %s producers × %,d msgs, capacity %d", producers,
                    virtual ? "virtual-thread" : "platform", perProducer, capacity);
        }
    }

    /** What the crowd is blocked on. */
    public enum Channel { MAILBOX, ABQ }

    private static final ThreadFactory VIRTUAL = findVirtualThreads();

    private final Shape shape;
    private final Queue queue;
    private final Integer[] payload;
    private final OrderCheck check;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    /** The thread in {@link #runOnce}: a failing producer interrupts it. */
    private volatile Thread consumer;
    /** Platform shape: the start line of each run (the producers and the consumer); null for virtual. */
    private final CyclicBarrier start;
    private final Thread[] platform;
    private volatile boolean closed;

    private Crowd(Shape shape, Queue queue, int batch) {
        this.shape = shape;
        this.queue = queue;
        this.payload = new Integer[shape.messages()];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = i; // producer p sends p * perProducer .. (p + 1) * perProducer - 1, in order
        }
        this.check = new OrderCheck(shape.producers, shape.perProducer, batch);
        if (shape.virtual) {
            start = null;
            platform = null;
        } else {
            start = new CyclicBarrier(shape.producers + 1);
            platform = new Thread[shape.producers];
            for (int p = 0; p < platform.length; p++) {
                final int producer = p;
                platform[p] = new Thread(() -> platformLoop(producer), "crowd-producer-" + p);
                platform[p].setDaemon(true);
                platform[p].start();
            }
        }
    }

    /**
     * @throws UnsupportedOperationException for {@link Shape#VIRTUAL_10K} on a JDK without virtual threads
     */
    public static Crowd open(Shape shape, Channel channel, int batch) {
        if (shape.virtual && VIRTUAL == null) {
            throw new UnsupportedOperationException("virtual threads need JDK 21+ (this is " + Runtime.version()
                    + ")");
        }
        final Queue queue = channel == Channel.MAILBOX
                ? new MailboxQueue(Mailboxes.<Integer>builder().capacity(shape.capacity).name("crowd").build())
                : new AbqQueue(new ArrayBlockingQueue<>(shape.capacity));
        return new Crowd(shape, queue, batch);
    }

    /** @return a factory of virtual threads, or null on a JDK without them (before 21) */
    public static ThreadFactory virtualThreads() {
        return VIRTUAL;
    }

    private static ThreadFactory findVirtualThreads() {
        try {
            final Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            return (ThreadFactory) Class.forName("java.lang.Thread$Builder").getMethod("factory").invoke(builder);
        } catch (ReflectiveOperationException | RuntimeException unavailable) {
            return null;
        }
    }

    public Shape shape() {
        return shape;
    }

    /**
     * Runs one whole crowd and checks it.
     *
     * @return nanoseconds from just before the producers start to the receipt of the last message
     * @throws IllegalStateException if a message is missing, extra or out of order, or a producer failed
     */
    public long runOnce() throws InterruptedException {
        consumer = Thread.currentThread();
        final Thread[] virtual = shape.virtual ? new Thread[shape.producers] : null;
        Thread spawner = null;
        check.begin();
        final long t0;
        if (virtual != null) {
            t0 = System.nanoTime();
            spawner = VIRTUAL.newThread(() -> {
                for (int p = 0; p < virtual.length; p++) {
                    final int producer = p;
                    virtual[p] = VIRTUAL.newThread(() -> produce(producer));
                    virtual[p].start();
                }
            });
            spawner.start();
        } else {
            while (start.getNumberWaiting() < shape.producers) {
                Thread.onSpinWait(); // the last run's producers are on their way back to the start line
                if (failure.get() != null) {
                    break;
                }
            }
            t0 = System.nanoTime();
            await();
        }
        try {
            while (check.remaining() > 0) {
                queue.receive(check);
            }
        } catch (InterruptedException e) {
            check.verify(failure.get()); // a producer failed and woke us: say why
            throw e;
        }
        final long t1 = System.nanoTime();
        if (spawner != null) {
            spawner.join();
            for (Thread t : virtual) {
                t.join(); // all started: the last message came from the last of them
            }
        }
        check.verify(failure.get());
        return t1 - t0;
    }

    private void platformLoop(int producer) {
        try {
            for (;;) {
                start.await();
                if (closed) {
                    return;
                }
                produce(producer);
            }
        } catch (InterruptedException | BrokenBarrierException e) {
            if (!closed) {
                fail(e);
            }
        }
    }

    private void produce(int producer) {
        final Queue queue = this.queue;
        final Integer[] payload = this.payload;
        final int from = producer * shape.perProducer;
        final int to = from + shape.perProducer;
        try {
            for (int i = from; i < to; i++) {
                queue.send(payload[i]);
            }
        } catch (Throwable t) {
            fail(t);
        }
    }

    private void fail(Throwable t) {
        if (failure.compareAndSet(null, t)) {
            consumer.interrupt(); // the consumer waits for messages that will not come
        }
    }

    private void await() throws InterruptedException {
        try {
            start.await();
        } catch (BrokenBarrierException e) {
            throw new IllegalStateException("crowd: a producer left the start line", e);
        }
    }

    /** @return the mailbox's {@code producerParks} so far (cumulative), or -1 for {@link Channel#ABQ} */
    public long producerParks() {
        return queue.producerParks();
    }

    /** @return the mailbox's {@code stats()}, or null for {@link Channel#ABQ} */
    public String stats() {
        return queue.stats();
    }

    /** Lets the platform producers go (after waiting up to 10 s for them at the start line). */
    @Override
    public void close() {
        closed = true;
        if (platform == null) {
            return;
        }
        try {
            final long deadline = System.nanoTime() + 10_000_000_000L;
            while (start.getNumberWaiting() < shape.producers && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
            if (start.getNumberWaiting() == shape.producers) {
                await(); // they see closed and leave
            } else {
                for (Thread t : platform) {
                    t.interrupt(); // stuck after a failure
                }
            }
            for (Thread t : platform) {
                t.join(1000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // daemon threads: left behind
        }
    }

    // ------------------------------------------------------------------ the two channels

    private abstract static class Queue {
        abstract void send(Integer m) throws InterruptedException;

        /** Receives at least one message, at most what {@code check} still expects, into it. */
        abstract void receive(OrderCheck check) throws InterruptedException;

        long producerParks() {
            return -1L;
        }

        String stats() {
            return null;
        }
    }

    private static final class MailboxQueue extends Queue {
        private final Mailbox<Integer> mailbox;

        MailboxQueue(Mailbox<Integer> mailbox) {
            this.mailbox = mailbox;
        }

        @Override
        void send(Integer m) throws InterruptedException {
            mailbox.send(m);
        }

        @Override
        void receive(OrderCheck check) throws InterruptedException {
            mailbox.recvMany(check, Math.min(check.batch, check.remaining()));
        }

        @Override
        long producerParks() {
            return mailbox.stats().producerParks();
        }

        @Override
        String stats() {
            return mailbox.stats().toString();
        }
    }

    private static final class AbqQueue extends Queue {
        private final ArrayBlockingQueue<Integer> queue;

        AbqQueue(ArrayBlockingQueue<Integer> queue) {
            this.queue = queue;
        }

        @Override
        void send(Integer m) throws InterruptedException {
            queue.put(m);
        }

        @Override
        void receive(OrderCheck check) throws InterruptedException {
            final int max = Math.min(check.batch, check.remaining());
            check.accept(queue.take()); // parks while empty, then takes the rest under the same lock
            if (max > 1) {
                queue.drainTo(check.target, max - 1);
            }
        }
    }

    // ------------------------------------------------------------------ the check

    /** Counts a crowd's messages and checks each producer's order. Consumer thread only. */
    private static final class OrderCheck implements Consumer<Integer> {
        final int batch;
        /** What {@code drainTo} adds goes straight to the check. */
        final DrainTarget<Integer> target = new DrainTarget<>(this);
        private final int perProducer;
        private final int total;
        private final int[] next;
        private int received;
        private int firstBad = -1;

        OrderCheck(int producers, int perProducer, int batch) {
            this.perProducer = perProducer;
            this.total = producers * perProducer;
            this.next = new int[producers];
            this.batch = batch;
        }

        void begin() {
            Arrays.fill(next, 0);
            received = 0;
            firstBad = -1;
        }

        int remaining() {
            return total - received;
        }

        @Override
        public void accept(Integer m) {
            final int v = m;
            final int producer = v / perProducer;
            if (v - producer * perProducer != next[producer]++ && firstBad < 0) {
                firstBad = v;
            }
            received++;
        }

        void verify(Throwable failure) {
            if (failure != null) {
                throw new IllegalStateException("crowd: a producer failed", failure);
            }
            if (firstBad >= 0 || received != total) {
                throw new IllegalStateException("crowd: received=" + received + " expected=" + total
                        + (firstBad < 0 ? "" : " first out of order: message " + firstBad + " (producer "
                                + firstBad / perProducer + ", seq " + firstBad % perProducer + ")"));
            }
        }
    }
}

package dev.mighty.mailbox.bench;

import org.jctools.queues.MessagePassingQueue;

/**
 * A comparator ring whose consumer parks while it is empty ({@link BlockingConsumerRing}, {@link ParkingSpscRing}):
 * the one wiring the CLI's rows and JMH's {@code ComparatorThroughputBenchmark} drive.
 *
 * @param <E> the element type
 */
public interface ParkingRing<E> {
    /**
     * Offers {@code e}, waiting with {@code idle} while the ring is full. Producer.
     *
     * @throws InterruptedException if the wait is aborted
     */
    void send(E e, DrivenExecutor.Idle idle) throws InterruptedException;

    /**
     * Waits (parking while empty) for at least one element, then takes what is there, {@code max} in all. Consumer.
     *
     * @return the elements handed to {@code consumer}, at least 1
     * @throws InterruptedException if the wait is interrupted
     */
    int receive(MessagePassingQueue.Consumer<E> consumer, int max) throws InterruptedException;

    /** Drains what is there now, without waiting. Consumer. */
    int drainNow(MessagePassingQueue.Consumer<E> consumer);
}

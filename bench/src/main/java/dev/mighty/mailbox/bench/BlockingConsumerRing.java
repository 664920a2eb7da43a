package dev.mighty.mailbox.bench;

import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscBlockingConsumerArrayQueue;

/**
 * JCTools' {@link MpscBlockingConsumerArrayQueue}: the bare MPSC ring whose consumer can block, the JCTools
 * comparator closest to the mailbox's job (a receive that waits without spinning). Producers {@code offer},
 * spinning then yielding while it is full (it has no blocking producer side); the consumer {@code take()}s (parks
 * while empty), then {@code drain}s what else is there, up to its batch. Shared by the CLI's row and JMH's
 * {@code ComparatorThroughputBenchmark}, so both measure one wiring.
 *
 * <h2>Threads</h2>
 * {@link #send}: any thread; {@link #receive}: one consumer thread.
 */
public final class BlockingConsumerRing<E> implements ParkingRing<E> {
    private final MpscBlockingConsumerArrayQueue<E> queue;

    /** @param capacity the queue's capacity (JCTools rounds it up to a power of two) */
    public BlockingConsumerRing(int capacity) {
        this.queue = new MpscBlockingConsumerArrayQueue<>(capacity);
    }

    /** @return the queue */
    public MpscBlockingConsumerArrayQueue<E> queue() {
        return queue;
    }

    /**
     * Offers {@code e}, waiting with {@code idle} while the queue is full.
     *
     * @throws InterruptedException if the wait is aborted
     */
    @Override
    public void send(E e, DrivenExecutor.Idle idle) throws InterruptedException {
        for (int spins = 0; !queue.offer(e); ) {
            spins = idle.idle(spins);
        }
    }

    /**
     * Waits for one element ({@code take()}, which parks while the queue is empty), then drains what else is there,
     * {@code max} in all.
     *
     * @return the elements handed to {@code consumer}, at least 1
     * @throws InterruptedException if the wait is interrupted
     */
    @Override
    public int receive(MessagePassingQueue.Consumer<E> consumer, int max) throws InterruptedException {
        consumer.accept(queue.take());
        return max > 1 ? 1 + queue.drain(consumer, max - 1) : 1;
    }

    /** Drains what is there now, without waiting. */
    @Override
    public int drainNow(MessagePassingQueue.Consumer<E> consumer) {
        return queue.drain(consumer);
    }
}

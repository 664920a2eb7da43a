package dev.mighty.mailbox.bench;

import java.util.AbstractCollection;
import java.util.Iterator;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * A collection that hands what {@code BlockingQueue.drainTo} adds straight to a consumer and keeps nothing: a
 * batched receive from a JDK queue without a copy or an allocation.
 *
 * @param <T> the element type
 */
public final class DrainTarget<T> extends AbstractCollection<T> {
    private final Consumer<? super T> sink;

    public DrainTarget(Consumer<? super T> sink) {
        this.sink = Objects.requireNonNull(sink, "sink");
    }

    @Override
    public boolean add(T value) {
        sink.accept(value);
        return true;
    }

    @Override
    public Iterator<T> iterator() {
        throw new UnsupportedOperationException();
    }

    @Override
    public int size() {
        return 0;
    }
}

package dev.mighty.mailbox.bench.jmh;

import java.util.concurrent.Flow;

import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * Counts what a Reactor or JDK {@code Flow} pipeline delivers, with unbounded demand. Its {@code onNext}
 * runs on the benchmark thread (the pipelines deliver through a {@link dev.mighty.mailbox.bench.DrivenExecutor}
 * that thread drives), so {@link #count} is a plain field; {@link #subscribed} and {@link #error} are set
 * once and read by polling.
 */
final class CountingSubscriber implements CoreSubscriber<Object>, Flow.Subscriber<Object> {
    /** Demand per request; {@code Long.MAX_VALUE} for unbounded. */
    private final long chunk;
    private Subscription upstream;
    private long untilRequest;
    long count;
    Object last;
    volatile boolean subscribed;
    volatile Throwable error;

    CountingSubscriber() {
        this(Long.MAX_VALUE);
    }

    /** Requests {@code chunk} up front and {@code chunk} more each time that many have arrived. */
    CountingSubscriber(long chunk) {
        this.chunk = chunk;
        this.untilRequest = chunk;
    }

    @Override
    public void onSubscribe(Subscription s) {
        upstream = s;
        s.request(chunk);
        subscribed = true;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        s.request(Long.MAX_VALUE);
        subscribed = true;
    }

    @Override
    public void onNext(Object item) {
        last = item;
        count++;
        if (chunk != Long.MAX_VALUE && --untilRequest == 0) {
            untilRequest = chunk;
            upstream.request(chunk);
        }
    }

    @Override
    public void onError(Throwable t) {
        error = t;
    }

    @Override
    public void onComplete() {
    }

    void checkError() {
        final Throwable t = error;
        if (t != null) {
            throw new IllegalStateException("onError", t);
        }
    }
}

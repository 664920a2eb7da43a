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
    long count;
    Object last;
    volatile boolean subscribed;
    volatile Throwable error;

    @Override
    public void onSubscribe(Subscription s) {
        s.request(Long.MAX_VALUE);
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

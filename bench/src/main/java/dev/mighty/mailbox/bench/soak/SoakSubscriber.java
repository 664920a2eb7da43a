package dev.mighty.mailbox.bench.soak;

import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;

/**
 * The soak's subscriber: books every {@code onNext} in the {@link SoakLedger}, asks for a random amount whenever
 * its outstanding demand runs out (or leaves that to the controller thread, so zero-demand pauses happen too),
 * and, if given a {@code cancelAfter}, cancels from inside {@code onNext} (as Reactor's {@code take} does).
 * Requests and cancels also come from the controller thread, racing the deliveries.
 *
 * <p>Threads: {@code onNext} is serial (§1.3, checked by the ledger); {@link #request}, {@link #cancel} and the
 * accessors: any thread.
 */
final class SoakSubscriber implements CoreSubscriber<SoakLedger.Message> {
    private final SoakLedger ledger;
    private final int maxRequest;
    private final long cancelAfter;
    /** onNext's own random source (serial); the controller uses its own. */
    private final SplittableRandom random;
    private final AtomicLong outstanding = new AtomicLong();
    private final CountDownLatch terminated = new CountDownLatch(1);
    private volatile Subscription upstream;
    private volatile boolean cancelled;
    private volatile Throwable error;
    private long delivered;

    SoakSubscriber(SoakLedger ledger, int maxRequest, long cancelAfter, long seed) {
        this.ledger = ledger;
        this.maxRequest = maxRequest;
        this.cancelAfter = cancelAfter;
        this.random = new SplittableRandom(seed);
    }

    @Override
    public void onSubscribe(Subscription s) {
        upstream = s;
        request(1 + random.nextInt(maxRequest));
    }

    @Override
    public void onNext(SoakLedger.Message m) {
        if (outstanding.getAndDecrement() <= 0) {
            outstanding.incrementAndGet();
            ledger.beyondDemand(); // §1.1 broken
        }
        ledger.accept(m);
        delivered++;
        if (cancelAfter > 0 && delivered == cancelAfter) {
            cancel(); // on the delivering (polling) thread: nothing more is taken
            return;
        }
        if (outstanding.get() == 0 && random.nextInt(5) != 0) {
            request(1 + random.nextInt(maxRequest)); // re-entrant request: trampolined by the publisher
        }
    }

    @Override
    public void onError(Throwable t) {
        error = t;
        terminated.countDown();
    }

    @Override
    public void onComplete() {
        terminated.countDown();
    }

    /** Adds to the outstanding count first, so a delivery inside {@code request} is already allowed. */
    void request(long n) {
        if (outstanding.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b) != Long.MAX_VALUE) {
            upstream.request(n);
        }
    }

    /**
     * Cancels, then sets the flag the controller polls: a controller that sees {@link #isCancelled()} knows the
     * upstream's cancel has happened, so the next subscriber is accepted (queued if the last delivery is still
     * running), not refused as a second live one.
     */
    void cancel() {
        upstream.cancel();
        cancelled = true;
    }

    boolean isCancelled() {
        return cancelled;
    }

    long outstanding() {
        return outstanding.get();
    }

    Throwable error() {
        return error;
    }

    boolean awaitTerminated(long timeout, TimeUnit unit) throws InterruptedException {
        return terminated.await(timeout, unit);
    }
}

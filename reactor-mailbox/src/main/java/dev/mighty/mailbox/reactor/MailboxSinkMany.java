package dev.mighty.mailbox.reactor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.SendResult;
import dev.mighty.mailbox.internal.ConsumerRole;
import dev.mighty.mailbox.internal.MailboxRing;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;
import reactor.core.publisher.SignalType;
import reactor.core.publisher.Sinks;
import reactor.util.context.Context;

/**
 * The {@link Sinks.Many} of {@link MailboxSinks}: a view of a mailbox, with one field of its own (the terminal
 * emission's winner). The contract, threads, progress and visibility are {@link MailboxSinks}'.
 *
 * <p>Hot path: {@link #tryEmitNext} is {@link MailboxRing#offer} (one claim CAS, one release store of the slot,
 * the consumer's wake-up check) and a mapping of its answer; it reads no field of this class but {@code ring}
 * and writes none. The closed bit in the ring's producer word is what makes it answer {@code FAIL_TERMINATED}.
 *
 * @param <T> the value type
 */
final class MailboxSinkMany<T> implements Sinks.Many<T> {
    private final MailboxRing<T> ring;
    private final Flux<T> flux;

    /** 1 once a terminal emission of this sink won (written once, by CAS; read by scans). */
    private volatile int done;
    private static final VarHandle DONE;

    static {
        try {
            DONE = MethodHandles.lookup().findVarHandle(MailboxSinkMany.class, "done", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    MailboxSinkMany(Mailbox<T> mailbox) {
        this.ring = MailboxRing.of(Objects.requireNonNull(mailbox, "mailbox"));
        this.flux = MailboxFlux.from(mailbox);
    }

    // ------------------------------------------------------------------ try*

    @Override
    public Sinks.EmitResult tryEmitNext(T t) {
        final SendResult result = ring.offer(t); // NPE on null, as Reactor's sinks
        if (result == SendResult.OK) {
            return Sinks.EmitResult.OK;
        }
        return result == SendResult.FULL ? Sinks.EmitResult.FAIL_OVERFLOW : Sinks.EmitResult.FAIL_TERMINATED;
    }

    @Override
    public Sinks.EmitResult tryEmitComplete() {
        if (!winTerminal()) {
            return Sinks.EmitResult.FAIL_TERMINATED;
        }
        ring.close();
        // NOTE: a closeExceptionally by someone else may have won the race with our close: its error is what the
        // subscriber gets, so our completion was not emitted.
        return ring.closeCause() == null ? Sinks.EmitResult.OK : Sinks.EmitResult.FAIL_TERMINATED;
    }

    @Override
    public Sinks.EmitResult tryEmitError(Throwable error) {
        Objects.requireNonNull(error, "error");
        if (!winTerminal()) {
            return Sinks.EmitResult.FAIL_TERMINATED;
        }
        ring.closeExceptionally(error);
        // the first close decides: another close that won the race leaves a different (or no) cause
        return ring.closeCause() == error ? Sinks.EmitResult.OK : Sinks.EmitResult.FAIL_TERMINATED;
    }

    /** @return whether this call is the sink's one terminal emission and the mailbox was still open */
    private boolean winTerminal() {
        return DONE.compareAndSet(this, 0, 1) && !ring.isClosed();
    }

    // ------------------------------------------------------------------ emit* (Reactor's InternalManySink loop)

    @Override
    public void emitNext(T t, Sinks.EmitFailureHandler failureHandler) {
        for (;;) {
            final Sinks.EmitResult result = tryEmitNext(t);
            if (result.isSuccess()) {
                return;
            }
            if (failureHandler.onEmitFailure(SignalType.ON_NEXT, result)) {
                continue;
            }
            switch (result) {
                case FAIL_OVERFLOW:
                    Operators.onDiscard(t, currentContext());
                    // emitError drops the error (onErrorDropped) if the sink is terminated meanwhile
                    emitError(Exceptions.failWithOverflow("Backpressure overflow during Sinks.Many#emitNext"),
                            failureHandler);
                    return;
                case FAIL_TERMINATED:
                    Operators.onNextDropped(t, currentContext());
                    return;
                default: // never answered by this sink
                    throw new Sinks.EmissionException(result, "Unknown emitResult value");
            }
        }
    }

    @Override
    public void emitComplete(Sinks.EmitFailureHandler failureHandler) {
        for (;;) {
            final Sinks.EmitResult result = tryEmitComplete();
            if (result.isSuccess() || !failureHandler.onEmitFailure(SignalType.ON_COMPLETE, result)) {
                return; // FAIL_TERMINATED: nothing to drop
            }
        }
    }

    @Override
    public void emitError(Throwable error, Sinks.EmitFailureHandler failureHandler) {
        for (;;) {
            final Sinks.EmitResult result = tryEmitError(error);
            if (result.isSuccess()) {
                return;
            }
            if (!failureHandler.onEmitFailure(SignalType.ON_ERROR, result)) {
                Operators.onErrorDropped(error, currentContext()); // FAIL_TERMINATED, the only failure we answer
                return;
            }
        }
    }

    // ------------------------------------------------------------------ subscribers

    @Override
    public int currentSubscriberCount() {
        final ConsumerRole holder = ring.consumerRole();
        return holder != null && !holder.isCancelled() ? 1 : 0;
    }

    @Override
    public Flux<T> asFlux() {
        return flux;
    }

    /** @return the current {@code MailboxFlux} subscriber, or null (racy: for scans and hooks) */
    private CoreSubscriber<?> currentSubscriber() {
        final ConsumerRole holder = ring.consumerRole();
        if (holder instanceof MailboxFluxSubscription) {
            final Object actual = ((MailboxFluxSubscription<?>) holder).scanUnsafe(Attr.ACTUAL);
            if (actual instanceof CoreSubscriber) {
                return (CoreSubscriber<?>) actual;
            }
        }
        return null;
    }

    /** @return the context the Reactor hooks see: the current subscriber's, as Reactor's unicast sink does */
    private Context currentContext() {
        final CoreSubscriber<?> subscriber = currentSubscriber();
        return subscriber != null ? subscriber.currentContext() : Context.empty();
    }

    // ------------------------------------------------------------------ Scannable

    @Override
    @SuppressWarnings("rawtypes") // Scannable declares the raw Attr
    public Object scanUnsafe(Attr key) {
        final Object mailbox = RingScans.scan(ring, key);
        if (mailbox != null) {
            return mailbox;
        }
        if (key == Attr.TERMINATED) {
            return done != 0 || ring.isClosed();
        }
        if (key == Attr.ERROR) {
            return ring.closeCause();
        }
        if (key == Attr.CANCELLED) {
            return false;
        }
        if (key == Attr.ACTUAL) {
            return currentSubscriber();
        }
        return null;
    }

    @Override
    public String stepName() {
        return "sink(MailboxSinks, " + ring.name() + ")";
    }

    @Override
    public String toString() {
        return "MailboxSinks.many[name=" + ring.name() + ", capacity=" + ring.capacity() + ", size=" + ring.size()
                + ", terminated=" + (done != 0 || ring.isClosed()) + "]";
    }
}

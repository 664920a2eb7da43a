package dev.mighty.mailbox.internal;

import dev.mighty.mailbox.MailboxStats;
import jdk.jfr.EventType;
import jdk.jfr.FlightRecorder;
import jdk.jfr.FlightRecorderListener;

/**
 * The {@code jdk.jfr} side of {@link MailboxEvents}: creates and commits the events, and installs the periodic
 * consumer-stall check. Loaded only when {@link MailboxEvents#JFR} is true.
 *
 * <h2>Cost</h2>
 * While the Flight Recorder has never been initialized in this JVM, every entry point returns after one static
 * volatile read ({@link FlightRecorder#isInitialized()}) and allocates nothing: no event object, no JFR
 * initialization (which costs hundreds of milliseconds and some 300 classes). Once it is initialized, a park
 * reads whether the event is enabled from its cached {@link EventType} and allocates one event object only if
 * a recording enables it.
 *
 * <h2>Threads</h2>
 * Any thread. {@link #installStallCheck()} runs its registration once, whichever thread gets there first;
 * {@link #checkStalls()} runs on the recorder's periodic thread, or on the thread starting or stopping a
 * recording, and is serialized by the registry's monitor.
 */
final class MailboxJfr {
    /** Whether the stall check is installed: set once; read without a lock on slow paths only. */
    private static volatile boolean stallCheckInstalled;
    /** Whether the {@code eager} mode's listener is installed: set once. */
    private static volatile boolean listenerInstalled;
    /**
     * The {@link ProducerParkedEvent} type, looked up once the recorder is initialized (looking it up before
     * would initialize the recorder). NOTE: racing producers may each look it up: the same object, benign.
     */
    private static volatile EventType producerParkedType;

    private MailboxJfr() {
    }

    /** @return whether the Flight Recorder is initialized in this JVM (a recording exists or existed) */
    static boolean recorderInitialized() {
        return FlightRecorder.isInitialized();
    }

    /**
     * Registers the periodic {@link ConsumerStalledEvent} hook, once. Costs tens of milliseconds the first time
     * (the recorder registers the event type), so it is called only once the recorder is initialized anyway.
     */
    static void installStallCheck() {
        if (stallCheckInstalled) {
            return;
        }
        synchronized (MailboxJfr.class) {
            if (stallCheckInstalled) {
                return;
            }
            FlightRecorder.addPeriodicEvent(ConsumerStalledEvent.class, MailboxJfr::checkStalls);
            stallCheckInstalled = true;
        }
    }

    /**
     * The {@code eager} mode: installs, once, a listener that installs the stall check when the recorder
     * initializes (at once, if it has).
     */
    static void installOnInitialization() {
        if (listenerInstalled) {
            return;
        }
        synchronized (MailboxJfr.class) {
            if (listenerInstalled) {
                return;
            }
            listenerInstalled = true;
        }
        FlightRecorder.addListener(new FlightRecorderListener() {
            @Override
            public void recorderInitialized(FlightRecorder recorder) {
                installStallCheck();
            }
        });
    }

    /** The periodic hook: one {@link ConsumerStalledEvent} per stalled watched mailbox. Must not throw. */
    static void checkStalls() {
        final long now = System.nanoTime();
        MailboxEvents.forEachWatched((ring, watch) -> {
            final long stalledFor = watch.observe(ring.size(), ring.received(), now);
            if (stalledFor >= 0L) {
                final MailboxStats stats = ring.stats();
                final ConsumerStalledEvent event = new ConsumerStalledEvent();
                event.mailbox = ring.name();
                event.capacity = stats.capacity();
                event.size = stats.size();
                event.stalledFor = stalledFor;
                event.received = stats.received();
                event.parkedProducers = stats.parkedProducers();
                event.consumerWaiting = stats.consumerParked();
                event.commit();
            }
        });
    }

    /**
     * @return a begun {@link ProducerParkedEvent}, or null if no recording enables it (then nothing is allocated
     *         unless the recorder is initialized)
     */
    static Object producerParking() {
        if (!FlightRecorder.isInitialized()) {
            return null;
        }
        installStallCheck(); // a recording may have started after every mailbox was built
        EventType type = producerParkedType;
        if (type == null) {
            FlightRecorder.register(ProducerParkedEvent.class); // ignored if registered already
            producerParkedType = type = EventType.getEventType(ProducerParkedEvent.class);
        }
        if (!type.isEnabled()) {
            return null; // checked on the type, so a recording that disables the event allocates nothing
        }
        final ProducerParkedEvent event = new ProducerParkedEvent();
        event.begin();
        return event;
    }

    /** Ends the park begun by {@link #producerParking()}; commits if it lasted longer than the threshold. */
    static void producerParked(Object token, MailboxRing<?> ring) {
        final ProducerParkedEvent event = (ProducerParkedEvent) token;
        event.end();
        if (event.shouldCommit()) {
            event.mailbox = ring.name();
            event.capacity = ring.capacity();
            event.size = ring.size();
            event.reserved = ring.reserved();
            event.commit();
        }
    }

    /** Commits a {@link ClosedExceptionallyEvent} if a recording enables it. */
    static void closedExceptionally(MailboxRing<?> ring, Throwable cause) {
        if (!FlightRecorder.isInitialized()) {
            return;
        }
        final ClosedExceptionallyEvent event = new ClosedExceptionallyEvent();
        if (event.shouldCommit()) {
            event.mailbox = ring.name();
            event.capacity = ring.capacity();
            event.size = ring.size();
            event.causeClass = cause.getClass();
            event.causeMessage = messageOf(cause);
            event.commit();
        }
    }

    /** @return the cause's message; a {@code getMessage()} override that throws must not fail the close */
    private static String messageOf(Throwable cause) {
        try {
            return cause.getMessage();
        } catch (RuntimeException e) {
            return "<getMessage() threw " + e.getClass().getName() + ">";
        }
    }
}

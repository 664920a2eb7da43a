package dev.mighty.mailbox.internal;

import java.util.Locale;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.BiConsumer;

/**
 * The ring's only door to the JDK Flight Recorder: every method here is called from a slow path of
 * {@link MailboxRing} (construction, a producer about to park on a full mailbox, an exceptional close) and
 * never from {@code claim()}, {@code publish}, {@code poll()} or {@code afterReceive}.
 *
 * <p>This class names no {@code jdk.jfr} type, so {@code MailboxRing} links and runs on a runtime image
 * without the {@code jdk.jfr} module (a jlinked image, or a named application module that does not read it):
 * then {@link #JFR} is false and every method is a no-op. The {@code jdk.jfr} code sits in {@link MailboxJfr}
 * and the event classes, loaded only behind a {@code JFR} check.
 *
 * <h2>Cost while nobody records</h2>
 * A park or an exceptional close pays two static volatile reads ({@code failed} and
 * {@code FlightRecorder.isInitialized()}) and allocates nothing; so does construction in the default mode. See
 * {@link #MODE} for the registry of watched mailboxes that the periodic consumer-stall check walks.
 *
 * <h2>Failures</h2>
 * No method here throws: a JFR call that throws (say, a security manager denies it) switches recording off
 * for good, so that observability never fails a send, a close or a construction.
 *
 * <h2>Threads</h2>
 * Any thread. The registry is guarded by its own monitor; the stall check runs on the recorder's periodic
 * thread (or the thread starting or stopping a recording) and takes the same monitor.
 *
 * <p>Public only for {@link #enabled()} and {@link #recordingFailed()}: the Kafka bridge's event
 * ({@code dev.mighty.mailbox.kafka.UnacknowledgedRecordEvent}, in module {@code dev.mighty.mailbox.kafka}, to which
 * this package is exported) sits behind the same switch, so that
 * {@code -Ddev.mighty.mailbox.jfr=off}, a missing {@code jdk.jfr} module and a failed JFR call mean the same for it.
 */
public final class MailboxEvents {
    /**
     * System property: {@code auto} (default), {@code eager} or {@code off}.
     * <ul>
     *     <li>{@code auto}: a mailbox built while the Flight Recorder is initialized (for example under
     *     {@code -XX:StartFlightRecording}, or after any recording was created) is watched by the stall check;
     *     one built before is not. Building a mailbox costs one static volatile read otherwise.</li>
     *     <li>{@code eager}: every mailbox is watched (a synchronized put into a weak map per mailbox), and the
     *     first one installs a {@code FlightRecorderListener} (about 10 ms, once) so that a recording started
     *     later, e.g. by {@code jcmd <pid> JFR.start}, runs the stall check too.</li>
     *     <li>{@code off}: no event of this library is ever created and no mailbox is registered.</li>
     * </ul>
     */
    static final String MODE_PROPERTY = "dev.mighty.mailbox.jfr";
    static final String MODE = System.getProperty(MODE_PROPERTY, "auto").toLowerCase(Locale.ROOT);
    /** Whether the {@code jdk.jfr} module is readable here and the events are not switched off. */
    static final boolean JFR = !"off".equals(MODE) && jfrModulePresent();
    static final boolean EAGER = JFR && "eager".equals(MODE);

    /** Mailboxes watched by the stall check, each with its watch; weak keys, identity hash (no equals override). */
    private static final Map<MailboxRing<?>, StallWatch> WATCHED = new WeakHashMap<>();
    /**
     * Set once a JFR call has thrown (say, a security manager denies it): from then on nothing is recorded.
     * Observability must never fail a send, a close or a construction.
     */
    private static volatile boolean failed;

    private MailboxEvents() {
    }

    private static boolean jfrModulePresent() {
        // The boot layer holds the modules this class can read: on the class path every resolved system module,
        // and jdk.jfr is resolved unless the image lacks it or a named application module does not require it.
        final ModuleLayer boot = ModuleLayer.boot();
        return boot != null && boot.findModule("jdk.jfr").isPresent();
    }

    /**
     * Whether an event of this library may be created: {@code jdk.jfr} is readable, the mode is not {@code off},
     * and no JFR call has thrown. Two static reads (a final and a volatile). Any thread. For the events that live
     * outside this package: call their {@code jdk.jfr} code only when this is true, catch
     * {@code RuntimeException | LinkageError} around it, and report a catch with {@link #recordingFailed()}.
     *
     * @return whether this library's events may be created now
     */
    public static boolean enabled() {
        return JFR && !failed;
    }

    /** A JFR call made outside this package threw: nothing of this library is recorded from now on. Any thread. */
    public static void recordingFailed() {
        failed = true;
    }

    /**
     * Watches {@code ring} for the stall check. Called by the {@link MailboxRing} constructor.
     *
     * <p>NOTE: {@code ring} is not fully constructed yet (a subclass's slot storage is not). The stall check calls
     * only final {@code MailboxRing} methods ({@code size}, {@code received}, {@code stats}, {@code name}), which
     * read fields the superclass constructors have set; the monitor orders those writes before any such read.
     */
    static void register(MailboxRing<?> ring) {
        if (!JFR || failed) {
            return;
        }
        try {
            if (!EAGER && !MailboxJfr.recorderInitialized()) {
                return;
            }
            synchronized (WATCHED) {
                WATCHED.put(ring, new StallWatch());
            }
            // outside the monitor: the stall check takes it on the recorder's thread
            if (EAGER) {
                MailboxJfr.installOnInitialization();
            } else {
                MailboxJfr.installStallCheck();
            }
        } catch (RuntimeException | LinkageError e) {
            failed = true;
        }
    }

    /** Runs {@code action} on every live watched mailbox, under the registry's monitor. */
    static void forEachWatched(BiConsumer<MailboxRing<?>, StallWatch> action) {
        synchronized (WATCHED) {
            WATCHED.forEach(action);
        }
    }

    /** @return whether {@code ring} is watched by the stall check (tests) */
    static boolean isWatched(MailboxRing<?> ring) {
        synchronized (WATCHED) {
            return WATCHED.containsKey(ring);
        }
    }

    /**
     * Starts timing a producer's park on a full mailbox.
     *
     * @return a token for {@link #producerParked}, or null if no recording has the event enabled. Typed
     *         {@code Object} so that {@code MailboxRing} names no {@code jdk.jfr} type.
     */
    static Object producerParking() {
        if (!JFR || failed) {
            return null;
        }
        try {
            return MailboxJfr.producerParking();
        } catch (RuntimeException | LinkageError e) {
            failed = true;
            return null;
        }
    }

    /** Ends the park timed by {@code token} and commits the event if it lasted longer than its threshold. */
    static void producerParked(Object token, MailboxRing<?> ring) {
        if (token == null) {
            return;
        }
        try {
            MailboxJfr.producerParked(token, ring);
        } catch (RuntimeException | LinkageError e) {
            failed = true;
        }
    }

    /** Records that {@code ring} was closed with {@code cause}; called once, by the closer whose cause won. */
    static void closedExceptionally(MailboxRing<?> ring, Throwable cause) {
        if (!JFR || failed) {
            return;
        }
        try {
            MailboxJfr.closedExceptionally(ring, cause);
        } catch (RuntimeException | LinkageError e) {
            failed = true;
        }
    }
}

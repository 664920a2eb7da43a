package dev.mighty.mailbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.MailboxClosedException;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.StressSeed;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@link RoomReserve} on real threads: an owner that sends only on reservations (the Kafka receiver's poll thread:
 * "reserve a poll's worth, send it as one reserved run, else wait for room and park"), 1 or 2 consumers that receive
 * in batches of varying sizes and do some work (a consumer that keeps up hides lost wake-ups), capacities 1, 2, 4
 * and 8, a poll's worth {@code k} up to the capacity, fixed or changing from poll to poll (the owner's {@code wanted}
 * changes under a standing registration).
 *
 * <p>Every way the owner's registration can become unneeded is driven, each in some runs:
 * <ul>
 *   <li>a turn banks a poll's worth and wakes the owner (every run);</li>
 *   <li>the owner gets the room itself after a timed park (as the receiver wakes every {@code pollTimeout}) and ends
 *       the registration ({@code TIMED} runs);</li>
 *   <li>the owner's {@code wanted} shrinks or grows while the registration stands (varying {@code k});</li>
 *   <li>the owner stops running (its liveness check turns false mid-wait) and closes the mailbox itself, as the
 *       receiver's finish does ({@code STOP} runs);</li>
 *   <li>someone else closes the mailbox in the middle ({@code CLOSE} runs);</li>
 *   <li>a rival sender, a thread in {@code send(m, timeout)} with short timeouts, waits in the same room queue: a
 *       timed-out waiter hands its wake-up on, possibly to the owner's registration ({@code rival} runs).</li>
 * </ul>
 *
 * <p>What must hold: every message sent is received exactly once and in its sender's order; the owner is never
 * parked in an untimed wait ({@link Park}: it parks until its registration ends, with no timed retry, so a lost
 * wake-up is a stall) while banked plus free-and-unreserved room covers what it wants for longer than
 * {@link #LOST_WAKEUP_MILLIS} (a watchdog fails with a thread dump); nothing stops moving for {@link Hang#TIMEOUT};
 * and after the close every reservation is back: the ring's reserved count and {@code banked} are 0.
 */
@Timeout(300)
class RoomReserveStressTest {
    /** How long the owner may stay parked while the room it wants is there before the watchdog calls it lost. */
    static final long LOST_WAKEUP_MILLIS = Long.getLong("mailbox.test.lostWakeupMillis", 3_000L);
    private static final long SEED = Long.getLong("mailbox.stress.seed", 2026L);

    /**
     * How the owner parks for room: until its registration ends, with no timed retry (a lost wake-up is a stall);
     * for a short while, as for the receiver's liveness poll (then it reserves itself, and ends the registration
     * when it has a poll's worth); or either, drawn per wait (a registration the owner ended by itself, followed by
     * an untimed wait: a wake-up the ended one swallowed would strand the new one).
     */
    enum Park { UNTIMED, TIMED, MIXED }

    enum End { NONE, CLOSE, STOP }

    @Test
    void shouldWakeTheOwnerOnceItsRoomIsBankedAndLeaveNoReservationBehind() throws Exception {
        final SplittableRandom random = new SplittableRandom(SEED);
        final int[] capacities = {1, 2, 4, 8};
        for (int round = 0; round < 32; round++) {
            final int capacity = capacities[round % 4];
            // every capacity meets both park modes and every end; the rest is drawn
            final Park park = Park.values()[(round / 4) % 3];
            final End end = End.values()[(round / 2 + round / 8) % 3];
            run(random, "seed " + SEED + " round " + round, capacity, park, end, 20_000);
        }
    }

    @Tag("stress")
    @Test
    @Timeout(1800)
    void shouldWakeTheOwnerOnceItsRoomIsBankedAndLeaveNoReservationBehindForLong() throws Exception {
        final long seed = StressSeed.of("RoomReserveStressTest");
        final SplittableRandom random = new SplittableRandom(seed);
        for (int round = 0; round < 200; round++) {
            run(random, "seed " + seed + " round " + round, 1 << random.nextInt(4), Park.values()[random.nextInt(3)],
                    End.values()[random.nextInt(3)], 50_000);
        }
    }

    private static void run(SplittableRandom random, String round, int capacity, Park park, End end, long total)
            throws Exception {
        final Mailbox<Long> mailbox = Mailboxes.bounded(capacity);
        final MailboxRing<Long> ring = MailboxRing.of(mailbox);
        final int kMax = 1 + random.nextInt(capacity);
        final boolean varyK = random.nextBoolean();
        final int consumerCount = 1 + random.nextInt(2);
        final boolean rival = random.nextInt(3) == 0;
        final Books books = new Books();
        final Owner owner = new Owner(ring, mailbox, total, kMax, varyK, park, random.split());
        final Rival rivalSender = rival ? new Rival(mailbox, owner, random.split()) : null;
        final Object receiveLock = new Object();
        final List<ReceiveLoop> consumers = new ArrayList<>();
        for (int i = 0; i < consumerCount; i++) {
            consumers.add(new ReceiveLoop(mailbox, capacity, books, receiveLock, random.split(), i));
        }
        final long endAfter = end == End.NONE ? Long.MAX_VALUE : random.nextLong(total / 2);
        final String what = "capacity " + capacity + ", k <= " + kMax + (varyK ? " varying" : " fixed") + ", "
                + park + ", end " + end + (end == End.NONE ? "" : " after " + endAfter + " received") + ", "
                + consumerCount + " consumer(s)" + (rival ? ", a rival sender" : "") + ", " + round;
        owner.thread.start();
        if (rivalSender != null) {
            rivalSender.thread.start();
        }
        consumers.forEach(c -> c.thread.start());
        final List<String> failures = new CopyOnWriteArrayList<>();
        try {
            watch(ring, mailbox, owner, rivalSender, consumers, books, end, endAfter, what, failures);
        } finally {
            owner.stop = true;
            owner.running = false;
            LockSupport.unpark(owner.thread);
            owner.thread.join(Hang.TIMEOUT.toMillis());
            if (rivalSender != null) {
                rivalSender.thread.join(Hang.TIMEOUT.toMillis());
            }
            mailbox.close(); // if nobody did: the consumers drain what is left and end
            for (ReceiveLoop c : consumers) {
                c.thread.join(Hang.TIMEOUT.toMillis());
            }
        }
        // the owner's finish ran returnBanked() only if it saw the close; after it, anyone may (the mailbox is closed)
        owner.reserve.returnBanked();
        assertThat(failures).as(what).isEmpty();
        assertThat(owner.failures).as(what).isEmpty();
        if (rivalSender != null) {
            assertThat(rivalSender.failures).as(what).isEmpty();
        }
        for (ReceiveLoop c : consumers) {
            assertThat(c.failures).as(what).isEmpty();
            assertThat(c.thread.isAlive()).as("consumer ended (%s)", what).isFalse();
        }
        assertThat(owner.thread.isAlive()).as("owner ended (%s)", what).isFalse();
        assertThat(books.violations).as(what).isEmpty();
        assertThat(books.ownerReceived).as("owner's messages received (%s)", what).isEqualTo(owner.sent);
        if (rivalSender != null) {
            assertThat(books.rivalReceived).as("rival's messages received (%s)", what).isEqualTo(rivalSender.sent);
        }
        if (end == End.NONE) {
            assertThat(owner.sent).as("sent (%s)", what).isEqualTo(total);
        }
        assertThat(ring.reserved()).as("reservations left after the close (%s): %s", what, owner.reserve).isZero();
        assertThat(owner.reserve.banked()).as("banked after the close (%s)", what).isZero();
        assertThat(mailbox.isTerminated()).as(what).isTrue();
        System.out.println("RoomReserveStressTest: " + what + ": sent " + owner.sent
                + (rivalSender == null ? "" : " + " + rivalSender.sent + " by the rival") + ", untimed parks "
                + owner.parkEpisode + ", " + owner.reserve);
    }

    /**
     * The main thread's watch: ends the run as its {@link End} says, fails on a lost wake-up (the owner parked in an
     * {@code UNTIMED} wait while the room it wants is there, for {@link #LOST_WAKEUP_MILLIS}) and on a stall (no
     * progress for {@link Hang#TIMEOUT}), and returns once every sender is done and the mailbox is closed.
     */
    private static void watch(MailboxRing<Long> ring, Mailbox<Long> mailbox, Owner owner, Rival rival,
            List<ReceiveLoop> consumers, Books books, End end, long endAfter, String what, List<String> failures)
            throws InterruptedException {
        long lastProgress = -1L;
        long lastChange = System.nanoTime();
        long parkEpisode = -1L;
        long roomSince = 0L;
        boolean ended = false;
        for (;;) {
            Thread.sleep(1);
            if (!owner.failures.isEmpty() || (rival != null && !rival.failures.isEmpty())
                    || consumers.stream().anyMatch(c -> !c.failures.isEmpty()) || !books.violations.isEmpty()) {
                return; // asserted by the caller
            }
            if (!ended && books.received() >= endAfter) {
                ended = true;
                if (end == End.CLOSE) {
                    mailbox.close(); // someone else's close, in the middle
                } else if (end == End.STOP) {
                    owner.running = false; // the receiver's close: its liveness check turns false, then a wake-up
                    LockSupport.unpark(owner.thread);
                }
            }
            final boolean sendersDone = !owner.thread.isAlive() && (rival == null || !rival.thread.isAlive());
            if (sendersDone) {
                return;
            }
            // lost wake-up: parked in one untimed wait while banked + free-and-unreserved room covers what it wants
            final long episode = owner.parkEpisode;
            final RoomReserve reserve = owner.reserve;
            final long free = ring.capacity() - ring.size() - ring.reserved();
            if (owner.parked && owner.running && !ring.isClosed()
                    && reserve.banked() + free >= reserve.wanted()) {
                if (episode != parkEpisode) {
                    parkEpisode = episode;
                    roomSince = System.nanoTime();
                } else if (System.nanoTime() - roomSince > TimeUnit.MILLISECONDS.toNanos(LOST_WAKEUP_MILLIS)) {
                    failures.add("lost wake-up: the owner has been parked for " + LOST_WAKEUP_MILLIS + " ms while "
                            + "banked + free covers what it wants (" + what + "): " + diagnostics(ring, owner, rival,
                            consumers, books) + "\n" + Hang.threadDump());
                    return;
                }
            } else {
                parkEpisode = -1L;
            }
            final long progress = owner.sent + books.received() + (rival == null ? 0 : rival.sent);
            if (progress != lastProgress) {
                lastProgress = progress;
                lastChange = System.nanoTime();
            } else if (System.nanoTime() - lastChange > Hang.TIMEOUT.toNanos()) {
                failures.add("stall: no progress for " + Hang.TIMEOUT + " (" + what + "): "
                        + diagnostics(ring, owner, rival, consumers, books) + "\n" + Hang.threadDump());
                return;
            }
        }
    }

    private static String diagnostics(MailboxRing<Long> ring, Owner owner, Rival rival, List<ReceiveLoop> consumers,
            Books books) {
        return "stats=" + ring.stats() + " reserved=" + ring.reserved() + " " + owner + " " + owner.reserve
                + (rival == null ? "" : " " + rival) + " " + consumers + " " + books;
    }

    static String trace(Throwable t) {
        final java.io.StringWriter out = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(out));
        return out.toString();
    }

    /**
     * The owner: the receiver poll thread's calls on its reserve, in its order. Holds permits; a poll is {@code k}
     * messages, sent as one reserved run once {@code k} permits are held; without them it asks its reserve for the
     * rest and parks. Its messages are 0, 1, 2, ...
     */
    static final class Owner implements Runnable {
        final Thread thread = new Thread(this, "room-reserve-owner");
        final RoomReserve reserve;
        final List<String> failures = new CopyOnWriteArrayList<>();
        final Park park;
        private final MailboxRing<Long> ring;
        private final Mailbox<Long> mailbox;
        private final long total;
        private final int kMax;
        private final boolean varyK;
        private final SplittableRandom random;
        private final List<Long> batch = new ArrayList<>();
        /** The liveness check the reserve's turns read; false: the owner is closing. */
        volatile boolean running = true;
        /** The test is over: leave every wait. */
        volatile boolean stop;
        /** In an untimed wait for room (parked, or about to park). */
        volatile boolean parked;
        volatile long parkEpisode;
        volatile long sent;
        volatile String phase = "new";
        // ---- owner thread only
        private int permits;
        private int k;

        Owner(MailboxRing<Long> ring, Mailbox<Long> mailbox, long total, int kMax, boolean varyK, Park park,
                SplittableRandom random) {
            this.ring = ring;
            this.mailbox = mailbox;
            this.total = total;
            this.kMax = kMax;
            this.varyK = varyK;
            this.park = park;
            this.random = random;
            this.reserve = RoomReserve.unparking(ring, thread, () -> running);
            this.k = kMax;
        }

        @Override
        public void run() {
            try {
                long next = 0L;
                while (running && !stop && !ring.isClosed() && next < total) {
                    final int poll = (int) Math.min(k, total - next);
                    permits += reserve.takeBanked();
                    if (permits < poll) {
                        // the receiver reserves all that is free; sometimes only what the poll lacks
                        permits += ring.reserve(random.nextBoolean() ? ring.capacity() - permits : poll - permits);
                    }
                    if (permits >= poll) {
                        phase = "send";
                        reserve.end(); // a poll's worth held: a registration still standing is void
                        for (int i = 0; i < poll; i++) {
                            batch.add(next + i);
                        }
                        final int n = ring.sendReservedMany(batch, 0, poll);
                        batch.clear();
                        permits -= poll; // used, or returned by the ring if it closed
                        if (n == 0) {
                            break; // closed by someone else
                        }
                        next += n;
                        sent = next;
                        if (varyK) {
                            k = 1 + random.nextInt(kMax); // the next poll's worth: wanted shrinks or grows
                        }
                        work();
                        continue;
                    }
                    phase = "await-room";
                    if (!reserve.awaitingRoom(poll - permits)) {
                        continue; // the room is banked (or the wait ended at once): take it
                    }
                    if (park == Park.UNTIMED || (park == Park.MIXED && random.nextBoolean())) {
                        parkEpisode++;
                        parked = true;
                        phase = "parked";
                        while (reserve.awaiting() && running && !stop) {
                            LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(50)); // only to see 'stop'
                        }
                        parked = false;
                    } else {
                        phase = "parked-timed";
                        // a liveness wake-up (the receiver's pollTimeout), often before the room comes
                        LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(1 + random.nextInt(300)));
                    }
                    if (varyK && random.nextInt(4) == 0) {
                        k = 1 + random.nextInt(kMax); // a smaller or larger remainder while the registration stands
                    }
                }
            } catch (Throwable t) {
                failures.add("owner: " + trace(t));
            } finally {
                phase = "finish";
                // the receiver's finish: end the wait, give back what it holds, close, then return what a turn banked
                // after its take (a turn that banks after returnBanked() sees the close and returns it itself)
                reserve.end();
                permits += reserve.takeBanked();
                if (permits > 0) {
                    ring.releaseReserved(permits);
                    permits = 0;
                }
                if (!running || ring.isClosed()) {
                    mailbox.close();
                    reserve.returnBanked();
                }
                phase = "done";
            }
        }

        private void work() {
            final int p = random.nextInt(32);
            if (p == 0) {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(1 + random.nextInt(100)));
            } else if (p < 4) {
                Thread.yield();
            }
        }

        @Override
        public String toString() {
            return "owner{phase=" + phase + " sent=" + sent + " permits=" + permits + " k=" + k + " parked=" + parked
                    + " episodes=" + parkEpisode + " running=" + running + "}";
        }
    }

    /**
     * A second kind of room waiter: a thread in {@code send(m, timeout)} with short timeouts, retrying the same
     * message, so that its node in the room queue is woken, times out and hands on, or is withdrawn, next to the
     * owner's registration. Its messages are -1, -2, ...; it stops once the owner is done or the mailbox closes.
     */
    static final class Rival implements Runnable {
        final Thread thread = new Thread(this, "room-reserve-rival");
        final List<String> failures = new CopyOnWriteArrayList<>();
        private final Mailbox<Long> mailbox;
        private final Owner owner;
        private final SplittableRandom random;
        volatile long sent;

        Rival(Mailbox<Long> mailbox, Owner owner, SplittableRandom random) {
            this.mailbox = mailbox;
            this.owner = owner;
            this.random = random;
        }

        @Override
        public void run() {
            try {
                long m = -1L;
                while (owner.thread.isAlive() && !owner.stop) {
                    final java.time.Duration timeout = java.time.Duration.ofNanos(
                            TimeUnit.MICROSECONDS.toNanos(random.nextInt(4) == 0 ? 0 : 1 + random.nextInt(500)));
                    if (mailbox.send(m, timeout)) {
                        sent++;
                        m--;
                        if (random.nextInt(4) == 0) {
                            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(1 + random.nextInt(200)));
                        }
                    }
                }
            } catch (MailboxClosedException e) {
                // the close: what it sent is in the books
            } catch (Throwable t) {
                failures.add("rival: " + trace(t));
            }
        }

        @Override
        public String toString() {
            return "rival{sent=" + sent + " alive=" + thread.isAlive() + "}";
        }
    }

    /**
     * A consumer: batched receives ({@code tryRecvMany} or the parking {@code recvMany}) of 1, 2, 3, the capacity or
     * 64, with some work per message and between batches. Two of them take turns under one lock (one consumer at a
     * time, the mailbox's rule), so the books see one order.
     */
    static final class ReceiveLoop implements Runnable {
        final Thread thread;
        final List<String> failures = new CopyOnWriteArrayList<>();
        private final Mailbox<Long> mailbox;
        private final int capacity;
        private final Books books;
        private final Object lock;
        private final SplittableRandom random; // this thread's, after start
        private final Consumer<Long> sink;
        volatile long batches;

        ReceiveLoop(Mailbox<Long> mailbox, int capacity, Books books, Object lock, SplittableRandom random, int id) {
            this.thread = new Thread(this, "room-reserve-consumer-" + id);
            this.mailbox = mailbox;
            this.capacity = capacity;
            this.books = books;
            this.lock = lock;
            this.random = random;
            this.sink = m -> {
                books.receive(m);
                work(256);
            };
        }

        @Override
        public void run() {
            try {
                for (;;) {
                    final int max = new int[] {1, 2, 3, capacity, 64}[random.nextInt(5)];
                    final boolean parking = random.nextBoolean();
                    final int n;
                    synchronized (lock) {
                        n = parking ? mailbox.recvMany(sink, max) : mailbox.tryRecvMany(sink, max);
                    }
                    batches++;
                    if (n == 0) {
                        if (mailbox.isTerminated()) {
                            return;
                        }
                        Thread.yield(); // empty (tryRecvMany), or the other consumer holds the lock
                    }
                    work(16);
                }
            } catch (Throwable t) {
                failures.add(thread.getName() + ": " + trace(t));
            }
        }

        /** Some work, one time in {@code oneIn}: a busy microsecond or two, a yield, rarely a short park. */
        private void work(int oneIn) {
            final int p = random.nextInt(oneIn);
            if (p == 0) {
                LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(1 + random.nextInt(200)));
            } else if (p < 4) {
                Thread.yield();
            } else if (p < 16) {
                RingWaiters.busyStep(16 + random.nextInt(48)); // 0.5 .. 1 µs
            }
        }

        @Override
        public String toString() {
            return thread.getName() + "{batches=" + batches + " alive=" + thread.isAlive() + "}";
        }
    }

    /** What the consumers received; written under the receive lock, read after the threads end (or racily). */
    static final class Books {
        final List<String> violations = new CopyOnWriteArrayList<>();
        volatile long ownerReceived;
        volatile long rivalReceived;

        /** Under the receive lock: the owner's messages must come 0, 1, 2, ..., the rival's -1, -2, ... */
        void receive(Long m) {
            if (m >= 0) {
                if (m != ownerReceived) {
                    violation("owner's message " + m + " where " + ownerReceived + " was next");
                }
                ownerReceived = m + 1;
            } else {
                if (-m - 1 != rivalReceived) {
                    violation("rival's message " + m + " where " + (-rivalReceived - 1) + " was next");
                }
                rivalReceived = -m;
            }
        }

        long received() {
            return ownerReceived + rivalReceived;
        }

        private void violation(String what) {
            if (violations.size() < 10) {
                violations.add(what);
            }
        }

        @Override
        public String toString() {
            return "books{owner=" + ownerReceived + " rival=" + rivalReceived + " violations=" + violations.size()
                    + "}";
        }
    }
}

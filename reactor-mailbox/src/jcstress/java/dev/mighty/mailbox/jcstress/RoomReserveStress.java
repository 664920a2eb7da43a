package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE_INTERESTING;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Mode;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.Signal;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomReserve;

/**
 * {@code RoomReserve}, the wait for room that reserves on a parked owner's behalf (the Kafka receiver's poll thread):
 * the Dekker pair of {@code wanted} (the owner stores it, then loads {@code banked}) and {@code banked} (a turn adds to
 * it, then loads {@code wanted}), through the real class; and a close racing a turn that banks, which must leave no
 * reservation behind. The owner's wake-up is a counter ({@code r2}): every turn has finished once both actors have
 * returned (a waker whose wake-up finds a turn running leaves it to that turn's thread, which loops before it returns),
 * so the arbiter sees every wake-up there will ever be.
 */
public final class RoomReserveStress {
    private RoomReserveStress() {
    }

    /** A reserve over {@code mailbox} whose wake-up counts into {@code wakes}; the owner always runs. */
    static RoomReserve counting(Mailbox<Integer> mailbox, AtomicInteger wakes) {
        return new RoomReserve(Fixtures.ring(mailbox), wakes::incrementAndGet, () -> true);
    }

    /** {@return {@code reserve} registered for {@code k} on its full mailbox: a standing registration's start} */
    static RoomReserve registered(RoomReserve reserve, int k) {
        if (!reserve.awaitingRoom(k)) {
            throw new AssertionError("a full mailbox had room: " + reserve);
        }
        return reserve;
    }

    /**
     * A full mailbox of 1: the owner's {@code awaitingRoom(1)} (publish wanted, look at banked, register: the first
     * turn) vs the consumer's {@code tryRecv}, whose freed slot wakes the registration and runs a turn. r1 = the owner
     * decided to park (1) or not (0), r2 = wake-ups of the owner, r3 = banked.
     */
    @JCStressTest
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE,
            desc = "registered before the slot was freed: the receive's turn banked it and woke the parked owner")
    @Outcome(id = "0, 0, 1", expect = ACCEPTABLE,
            desc = "the slot was freed first: the owner's own first turn banked it; no park, no wake-up")
    @Outcome(id = "0, 1, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "the receive's wake-up came while the owner ran its first turn: the owner's thread ran the "
                    + "second turn, which banked the slot and woke the owner (a spurious unpark), and it does not park")
    @Outcome(id = "1, 0, .*", expect = FORBIDDEN,
            desc = "lost wake-up: the owner parks and nothing will unpark it, though the freed slot covers what it "
                    + "wanted")
    @Outcome(id = "0, ., 0", expect = FORBIDDEN, desc = "told not to park, yet nothing is banked for it")
    @Outcome(expect = FORBIDDEN, desc = "anything else")
    @State
    public static class AwaitingRoomVsRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final AtomicInteger wakes = new AtomicInteger();
        final RoomReserve reserve = counting(mailbox, wakes);

        @Actor
        public void owner(III_Result r) {
            r.r1 = reserve.awaitingRoom(1) ? 1 : 0;
        }

        @Actor
        public void consumer() {
            mailbox.tryRecv();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r2 = wakes.get();
            r.r3 = reserve.banked();
        }
    }

    /**
     * The pair with a registration standing: a full mailbox of 2, the owner registered for 2 (a whole poll). Its
     * {@code awaitingRoom(1)} (it now wants less: a smaller pending remainder), which finds the registration live and
     * does not run a turn, vs the consumer's {@code tryRecv}, whose turn banks 1. r1 = the owner decided to park,
     * r2 = wake-ups, r3 = banked.
     */
    @JCStressTest
    @Outcome(id = "0, 0, 1", expect = ACCEPTABLE,
            desc = "the turn banked 1 and read the old wanted (2): it registered again; the owner's load of banked saw "
                    + "the add and it does not park")
    @Outcome(id = "0, 1, 1", expect = ACCEPTABLE_INTERESTING,
            desc = "both saw each other: the turn read wanted 1 and woke the owner, and the owner saw banked 1 and "
                    + "does not park (a spurious unpark)")
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE,
            desc = "the owner looked before the add and parks; the turn read wanted 1 and woke it")
    @Outcome(id = "1, 0, 1", expect = FORBIDDEN,
            desc = "lost wake-up (the Dekker pair broken): the owner read banked 0 and parks, the turn read wanted 2 "
                    + "and registered again, and 1 banked slot covers what the owner wants")
    @Outcome(expect = FORBIDDEN, desc = "anything else")
    @State
    public static class WantedShrinksVsRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(2, 2);
        final AtomicInteger wakes = new AtomicInteger();
        final RoomReserve reserve = registered(counting(mailbox, wakes), 2);

        @Actor
        public void owner(III_Result r) {
            r.r1 = reserve.awaitingRoom(1) ? 1 : 0;
        }

        @Actor
        public void consumer() {
            mailbox.tryRecv();
        }

        @Arbiter
        public void arbiter(III_Result r) {
            r.r2 = wakes.get();
            r.r3 = reserve.banked();
        }
    }

    /**
     * The pair with a real parked thread: a full mailbox of 1; the owner registers for 1 and parks until its
     * registration ends, with no timed retry, vs the consumer's {@code tryRecv}.
     */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "the freed slot was banked, by the owner's first turn (no park) or by the receive's turn, which "
                    + "ended the registration and unparked the owner")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: the owner stays parked with a registration that nothing will wake, and the freed "
                    + "slot free or banked for it")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the owner threw")
    @State
    public static class ParkedOwnerVsRecv {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        volatile Thread owner;
        final RoomReserve reserve = new RoomReserve(Fixtures.ring(mailbox), () -> LockSupport.unpark(owner),
                () -> true);

        @Actor
        public void owner() {
            owner = Thread.currentThread(); // before the registration: its wake-up unparks this thread
            if (reserve.awaitingRoom(1)) {
                while (reserve.awaiting()) {
                    LockSupport.park(this);
                }
            }
        }

        @Signal
        public void consumer() {
            mailbox.tryRecv();
        }
    }

    /**
     * A close racing a turn that banks: a full mailbox of 1, the owner registered for 1. The consumer's
     * {@code tryRecv} runs a turn that reserves the freed slot and adds it to banked, vs someone else's close followed
     * by the owner's {@code returnBanked()}. r1 = the mailbox's reserved count, r2 = banked, after both.
     */
    @JCStressTest
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "the turn reserved before the close: returnBanked() took it back, or the turn's add came after "
                    + "returnBanked() and the turn, seeing the close, gave it back itself; or the close came first and "
                    + "the turn reserved nothing")
    @Outcome(expect = FORBIDDEN, desc = "a reservation leaked: banked after the close, or reserved and lost")
    @State
    public static class CloseVsBankingTurn {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final RoomReserve reserve = registered(counting(mailbox, new AtomicInteger()), 1);

        @Actor
        public void consumer() {
            mailbox.tryRecv();
        }

        @Actor
        public void closer() {
            mailbox.close();
            reserve.returnBanked();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r1 = (int) ring.reserved();
            r.r2 = reserve.banked();
        }
    }

    /**
     * The receiver's finish racing a turn that banks: a full mailbox of 1, the owner registered for 1. The consumer's
     * {@code tryRecv} vs the owner's finish, in the receiver's order: {@code end()}, release what it took from banked,
     * close, {@code returnBanked()}. r1 = reserved, r2 = banked, after both.
     */
    @JCStressTest
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
            desc = "whatever the turn banked came back: taken and released by the owner, returned after the close, "
                    + "or returned by the turn itself when it saw the close after its add")
    @Outcome(expect = FORBIDDEN, desc = "a reservation leaked")
    @State
    public static class FinishVsBankingTurn {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final RoomReserve reserve = registered(counting(mailbox, new AtomicInteger()), 1);

        @Actor
        public void consumer() {
            mailbox.tryRecv();
        }

        @Actor
        public void owner() {
            reserve.end();
            ring.releaseReserved(reserve.takeBanked());
            mailbox.close();
            reserve.returnBanked();
        }

        @Arbiter
        public void arbiter(II_Result r) {
            r.r1 = (int) ring.reserved();
            r.r2 = reserve.banked();
        }
    }
}

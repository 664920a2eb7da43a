package dev.mighty.mailbox.jcstress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Mode;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.Signal;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.internal.MailboxRing;
import dev.mighty.mailbox.internal.RoomTicket;
import dev.mighty.mailbox.rs.MailboxSubscriber;
import org.reactivestreams.Subscription;

/**
 * The token rule of room wake-ups (every wake-up is used or handed on), where a registration becomes unneeded at
 * the moment a waker takes it: the withdrawal either removes it before the waker sees it or hands the wake-up it
 * got to the waiter behind it.
 */
public final class RoomTicketStress {
    private RoomTicketStress() {
    }

    /**
     * A full mailbox of 1; a ticket registered first, a thread parked in {@code send} behind it. The consumer frees
     * the slot (the wake-up goes to the oldest waiter, the ticket) while the ticket's owner, having nothing to send
     * any more, withdraws it. The actor (the consumer) then waits for the parked send.
     */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "withdrawn before the wake-up (the waker skipped it and woke the sender), or woken first and the "
                    + "withdrawal handed the wake-up on: the sender got the slot")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: the woken registration declined without handing on; the sender stays parked "
                    + "beside a free slot")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the consumer threw")
    @State
    public static class WokenTicketDeclinesVsSenderBehind {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final MailboxRing<Integer> ring = Fixtures.ring(mailbox);
        final RoomTicket ticket = ring.roomTicket(new Fixtures.Flag());
        final Thread sender;

        public WokenTicketDeclinesVsSenderBehind() {
            ticket.await(); // full: queued first
            sender = Fixtures.sender(mailbox, 1);
        }

        @Actor
        public void consumer() throws InterruptedException {
            mailbox.tryRecv();
            sender.join();
        }

        @Signal
        public void owner() {
            ticket.withdraw();
        }
    }

    /**
     * The interrupt hand-off: a full mailbox of 1, a send parked first and a second one parked behind it. The
     * consumer frees the slot (the wake-up goes to the first) while the first is interrupted: it gives up, and a
     * wake-up it got must go to the second. The actor (the consumer) then waits for the second send.
     */
    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE,
            desc = "interrupted before the wake-up (it left the queue, the waker woke the second), or woken first and "
                    + "it handed the wake-up on as it threw InterruptedException (or it got the slot, and the second "
                    + "got the next one the actor's second receive freed)")
    @Outcome(id = "STALE", expect = FORBIDDEN,
            desc = "lost wake-up: the interrupted waiter took the slot's wake-up with it; the second send stays "
                    + "parked beside a free slot")
    @Outcome(id = "ERROR", expect = FORBIDDEN, desc = "the consumer threw")
    @State
    public static class InterruptedWaiterHandsOn {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final Thread first;
        final Thread second;

        public InterruptedWaiterHandsOn() {
            first = Fixtures.sender(mailbox, 1);
            Fixtures.awaitParked(first, mailbox);
            second = Fixtures.sender(mailbox, 2);
            Fixtures.awaitParked(second, mailbox);
        }

        @Actor
        public void consumer() throws InterruptedException {
            mailbox.tryRecv(); // one slot: the first's, unless it gave up
            first.join();      // it sent (1) or threw InterruptedException
            while (second.isAlive()) {
                mailbox.tryRecv(); // frees what the first (if it got in) or the second takes
                second.join(1);
            }
        }

        @Signal
        public void interrupter() {
            first.interrupt();
        }
    }

    /**
     * A {@code MailboxSubscriber} holding a buffered message (the mailbox of 1 was full) vs the consumer freeing the
     * slot (which wakes the subscriber's registration, which admits it) vs someone else's close. r1 = the message
     * admitted, r2 = counted as rejected because closed.
     */
    @JCStressTest
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "the freed slot's wake-up admitted it before the close")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "the close came first: dropped and counted once")
    @Outcome(id = "0, 0", expect = FORBIDDEN, desc = "lost: neither admitted nor counted")
    @Outcome(id = "1, 1", expect = FORBIDDEN, desc = "admitted and counted as rejected")
    @Outcome(expect = FORBIDDEN, desc = "anything else")
    @State
    public static class BufferedMessageVsRecvVsClose {
        final Mailbox<Integer> mailbox = Fixtures.filled(1, 1);
        final MailboxSubscriber<Integer> subscriber = new MailboxSubscriber<>(mailbox, 1);

        public BufferedMessageVsRecvVsClose() {
            subscriber.onSubscribe(new Subscription() {
                @Override
                public void request(long n) {
                }

                @Override
                public void cancel() {
                }
            });
            subscriber.onNext(7); // full: buffered, registered for room
        }

        @Actor
        public void consumer() {
            mailbox.tryRecv();
        }

        @Actor
        public void closer() {
            mailbox.close();
        }

        @Arbiter
        public void arbiter(JJ_Result r) {
            r.r1 = mailbox.stats().admitted() - 1L; // the filler
            r.r2 = mailbox.stats().rejectedClosed();
        }
    }
}

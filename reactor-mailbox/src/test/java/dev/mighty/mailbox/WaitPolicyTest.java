package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.mighty.mailbox.internal.Backoff;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class WaitPolicyTest {

    @Test
    void shouldRejectStepCountsWhenOutOfRange() {
        assertThatThrownBy(() -> WaitPolicy.backoff(-1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("spins: -1 (expected: 0 .. 1048576)");
        assertThatThrownBy(() -> WaitPolicy.backoff(0, WaitPolicy.MAX_STEPS + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("yields: 1048577 (expected: 0 .. 1048576)");
    }

    @Test
    void shouldTakeSpinsInBurstsThenYieldsThenStopWhenBackingOff() {
        // 40 spin-waits in bursts of 16 (16, 16, 8: a look after each burst), then 2 yields
        assertThat(stepsOf(WaitPolicy.backoff(40, 2))).isEqualTo(3 + 2);
        assertThat(stepsOf(WaitPolicy.backoff(3, 2))).isEqualTo(1 + 2);
        assertThat(stepsOf(WaitPolicy.backoff(Backoff.SPIN_BURST, 0))).isEqualTo(1);
        assertThat(stepsOf(WaitPolicy.backoff(0, 5))).isEqualTo(5);
        assertThat(stepsOf(WaitPolicy.defaults()))
                .isEqualTo(WaitPolicy.DEFAULT_SPINS / Backoff.SPIN_BURST + WaitPolicy.DEFAULT_YIELDS);
        assertThat(Backoff.idle(WaitPolicy.backoff(3, 2), 1_000)).isFalse();
    }

    /** @return how many steps {@code policy}'s back-off takes before it is spent */
    private static int stepsOf(WaitPolicy policy) {
        int steps = 0;
        while (Backoff.idle(policy, steps)) {
            steps++;
        }
        return steps;
    }

    @Test
    void shouldParkAtOnceWhenGivenNoSteps() {
        assertThat(WaitPolicy.backoff(0, 0)).isSameAs(WaitPolicy.park());
        assertThat(Backoff.parksAtOnce(WaitPolicy.park())).isTrue();
        assertThat(Backoff.idle(WaitPolicy.park(), 0)).isFalse();
        assertThat(Backoff.parksAtOnce(WaitPolicy.defaults())).isFalse();
        assertThat(WaitPolicy.defaults()).isEqualTo(WaitPolicy.backoff(WaitPolicy.DEFAULT_SPINS,
                WaitPolicy.DEFAULT_YIELDS));
        assertThat(WaitPolicy.defaults().toString()).isEqualTo("WaitPolicy[spins=128, yields=64]");
    }

    @Test
    void shouldRejectNullWhenGivenToTheBuilder() {
        assertThatThrownBy(() -> Mailboxes.builder().waitPolicy(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessage("waitPolicy");
    }

    @Test
    void shouldReceiveEverythingInOrderWhenEachPolicyWaits() throws Exception {
        for (WaitPolicy policy : List.of(WaitPolicy.park(), WaitPolicy.backoff(1, 0), WaitPolicy.defaults(),
                WaitPolicy.backoff(10_000, 10_000))) {
            final Mailbox<Integer> mailbox = Mailboxes.<Integer>builder().capacity(16).waitPolicy(policy).build();
            final int n = 20_000;
            final Thread producer = new Thread(() -> {
                try {
                    for (int i = 0; i < n; i++) {
                        mailbox.send(i);
                        if ((i & 1023) == 0) {
                            Thread.sleep(1); // let the consumer go idle now and then: every wait ends in a park
                        }
                    }
                    mailbox.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            producer.start();
            final List<Integer> received = new ArrayList<>(n);
            while (mailbox.recvMany(received::add, 64) > 0) {
                // until closed and drained
            }
            producer.join(Duration.ofSeconds(20).toMillis());
            assertThat(received).as("policy %s", policy).hasSize(n);
            for (int i = 0; i < n; i++) {
                assertThat(received.get(i)).as("policy %s, index %d", policy, i).isEqualTo(i);
            }
        }
    }

    @Test
    void shouldSeeTheCloseWhenBackingOffOnAnEmptyMailbox() throws Exception {
        final Mailbox<Integer> mailbox = Mailboxes.<Integer>builder().capacity(4)
                .waitPolicy(WaitPolicy.backoff(WaitPolicy.MAX_STEPS, 0)).build();
        final Thread closer = new Thread(() -> {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            mailbox.close();
        });
        closer.start();
        assertThat(mailbox.recv()).isNull(); // a long spin still sees the close
        assertThat(mailbox.isTerminated()).isTrue();
        closer.join();
    }
}

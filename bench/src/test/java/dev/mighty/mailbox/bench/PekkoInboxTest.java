package dev.mighty.mailbox.bench;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The Pekko comparator receives every batch, checked; a batch out of order fails its check. */
class PekkoInboxTest {
    static final int BATCH = 500;

    static Integer[] payload() {
        final Integer[] payload = new Integer[BATCH];
        for (int i = 0; i < BATCH; i++) {
            payload[i] = i;
        }
        return payload;
    }

    static void awaitBatches(PekkoInbox inbox, int batches) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (inbox.completedBatches() < batches) {
            assertThat(System.nanoTime() - deadline).as("batches received in time").isNegative();
            Thread.sleep(1);
        }
    }

    @Test
    @Timeout(120)
    void shouldReceiveEveryBatchInOrderWhenTheProducerTellsTheActor() throws Exception {
        try (PekkoInbox inbox = PekkoInbox.actor("test-actor", BATCH)) {
            final Integer[] payload = payload();
            for (int b = 0; b < 3; b++) {
                inbox.send(payload, BATCH, spins -> {
                    Thread.onSpinWait();
                    return spins + 1;
                });
            }
            awaitBatches(inbox, 3);
            inbox.checkFailure();
            assertThat(inbox.completedBatches()).isEqualTo(3);
            assertThat(inbox.lastBatchEndNanos()).isPositive();
        }
    }

    @Test
    @Timeout(120)
    void shouldReceiveEveryBatchInOrderWhenTheProducerOffersToASmallSourceQueue() throws Exception {
        try (PekkoInbox inbox = PekkoInbox.sourceQueue("test-source-queue", 8, BATCH)) {
            final Integer[] payload = payload();
            for (int b = 0; b < 3; b++) {
                inbox.send(payload, BATCH, spins -> {
                    Thread.yield();
                    return spins + 1;
                });
            }
            awaitBatches(inbox, 3);
            inbox.checkFailure();
            assertThat(inbox.completedBatches()).isEqualTo(3);
        }
    }

    @Test
    @Timeout(120)
    void shouldFailTheCheckWhenTwoMessagesArriveOutOfOrder() throws Exception {
        try (PekkoInbox inbox = PekkoInbox.actor("test-actor-fault", BATCH)) {
            final Integer[] payload = payload();
            payload[0] = 1;
            payload[1] = 0;
            inbox.send(payload, BATCH, spins -> spins + 1);
            awaitBatches(inbox, 1);
            assertThatThrownBy(inbox::checkFailure).isInstanceOf(IllegalStateException.class)
                    .hasMessage("test-actor-fault: batch 0: firstMismatch: index=0 value=1");
        }
    }
}

package dev.mighty.mailbox.bench;

import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The placement helper: it pins where it can, says why where it cannot, and never throws. */
class AffinityTest {

    @Test
    void shouldAnswerAReasonInsteadOfThrowingWhenTheCpuCannotBeUsed() throws Exception {
        final AtomicReference<String> negative = new AtomicReference<>();
        final AtomicReference<String> huge = new AtomicReference<>();
        onOwnThread(() -> {
            negative.set(Affinity.pin(-1));
            huge.set(Affinity.pin(100_000));
        });

        assertThat(negative.get()).isNotBlank();
        assertThat(huge.get()).isNotBlank();
    }

    @Test
    void shouldKeepTheThreadUnpinnedAndRecordWhyWhenPinningFails() throws Exception {
        final Placement impossible = Placement.pinned(new int[] {100_000});
        final AtomicReference<String> why = new AtomicReference<>();
        final AtomicReference<int[]> cpus = new AtomicReference<>();
        onOwnThread(() -> {
            why.set(impossible.place(Placement.PRODUCER));
            cpus.set(Affinity.currentCpus());
        });

        assertThat(why.get()).isNotBlank();
        assertThat(impossible.failure()).contains("cpu 100000");
        if (Affinity.unavailable() == null) {
            assertThat(cpus.get()).as("still on every allowed CPU").isEqualTo(Affinity.allowedCpus());
        }
    }

    @Test
    void shouldPinToOneCpuAndUnpinBackWhereLinuxAllowsIt() throws Exception {
        final int[] allowed = Affinity.allowedCpus();
        assertThat(allowed).isNotEmpty();
        final AtomicReference<int[]> pinned = new AtomicReference<>();
        final AtomicReference<int[]> unpinned = new AtomicReference<>();
        final AtomicReference<String> why = new AtomicReference<>();
        onOwnThread(() -> {
            why.set(Affinity.pin(allowed[allowed.length - 1]));
            pinned.set(Affinity.currentCpus());
            Affinity.unpin();
            unpinned.set(Affinity.currentCpus());
        });

        if (Affinity.unavailable() != null) { // not Linux, or no native access: the fallback answers why
            assertThat(why.get()).isEqualTo(Affinity.unavailable());
            assertThat(pinned.get()).isNull();
            return;
        }
        assertThat(why.get()).isNull();
        assertThat(pinned.get()).containsExactly(allowed[allowed.length - 1]);
        assertThat(unpinned.get()).isEqualTo(allowed);
    }

    @Test
    void shouldPlaceSlotsRoundRobinAndSaySoWhenThereAreFewerCpusThanThreads() {
        final Placement two = Placement.pinned(new int[] {3, 5});

        assertThat(two.cpuOf(Placement.PRODUCER)).isEqualTo(3);
        assertThat(two.cpuOf(Placement.CONSUMER)).isEqualTo(5);
        assertThat(two.cpuOf(Placement.emitter(1))).isEqualTo(3);
        assertThat(two.cpuOf(Placement.emitter(2))).isEqualTo(5);
        assertThat(two.describe(5)).contains("fewer CPUs than threads, round-robin");
        assertThat(two.describe(2)).contains("one each");
        assertThat(Placement.unpinned().cpuOf(Placement.PRODUCER)).isEqualTo(-1);
    }

    static void onOwnThread(Runnable r) throws InterruptedException {
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread t = new Thread(() -> {
            try {
                r.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "affinity-test");
        t.start();
        t.join(10_000);
        assertThat(failure.get()).isNull();
    }
}

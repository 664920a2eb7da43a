package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.internal.Demand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(300)
class DemandTest {
    volatile long requested;
    static final VarHandle REQUESTED;

    static {
        try {
            REQUESTED = MethodHandles.lookup().findVarHandle(DemandTest.class, "requested", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @Test
    void shouldCapAtLongMaxValueWhenTheSumOverflows() {
        assertThat(Demand.addCap(1L, 2L)).isEqualTo(3L);
        assertThat(Demand.addCap(Long.MAX_VALUE - 1, 1L)).isEqualTo(Long.MAX_VALUE);
        assertThat(Demand.addCap(Long.MAX_VALUE, Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void shouldReturnThePreviousValueWhenAdding() {
        assertThat(Demand.add(REQUESTED, this, 5L)).isZero();
        assertThat(Demand.add(REQUESTED, this, Long.MAX_VALUE)).isEqualTo(5L);
        assertThat(requested).isEqualTo(Long.MAX_VALUE); // §3.17
        assertThat(Demand.add(REQUESTED, this, 1L)).isEqualTo(Long.MAX_VALUE);
        assertThat(requested).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void shouldNotConsumeUnboundedDemandWhenProducing() {
        requested = Long.MAX_VALUE;
        assertThat(Demand.produced(REQUESTED, this, 1_000L)).isEqualTo(Long.MAX_VALUE);
        requested = 10L;
        assertThat(Demand.produced(REQUESTED, this, 4L)).isEqualTo(6L);
        assertThat(requested).isEqualTo(6L);
    }

    @Test
    void shouldThrowWhenProducingMoreThanRequested() {
        requested = 2L;
        assertThatThrownBy(() -> Demand.produced(REQUESTED, this, 3L))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("more produced than requested: requested=2, produced=3");
    }

    @Test
    void shouldKeepEveryRequestWhenAddersRaceAProducer() {
        for (int round = 0; round < 200; round++) {
            requested = 0L;
            final int[] drained = new int[1];
            Hang.race(
                    () -> {
                        for (int i = 0; i < 1_000; i++) {
                            Demand.add(REQUESTED, this, 1L);
                        }
                    },
                    () -> {
                        for (int i = 0; i < 1_000; i++) {
                            Demand.add(REQUESTED, this, 2L);
                        }
                    },
                    () -> {
                        for (int i = 0; i < 2_000; i++) {
                            if (requested > 0L) {
                                Demand.produced(REQUESTED, this, 1L);
                                drained[0]++;
                            }
                        }
                    });
            assertThat(requested + drained[0]).isEqualTo(3_000L);
        }
    }
}

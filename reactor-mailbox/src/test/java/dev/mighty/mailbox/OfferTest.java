package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** {@link Mailbox#offer(Object)}: {@code trySend} that answers {@link SendResult} instead of throwing. */
class OfferTest {

    static Stream<MailboxVariant> variants() {
        return Stream.of(MailboxVariant.values());
    }

    @Nested
    class OfferAnswersInsteadOfThrowing {

        @ParameterizedTest(name = "{0}")
        @MethodSource("dev.mighty.mailbox.OfferTest#variants")
        void shouldAnswerOkThenFullThenClosedWhenFilledAndClosed(MailboxVariant v) {
            final Mailbox<Object> mb = v.create(4);
            for (long id = 0; id < 4; id++) {
                assertThat(mb.offer(v.message(id))).as("offer(%d)", id).isEqualTo(SendResult.OK);
            }
            assertThat(mb.offer(v.message(4))).isEqualTo(SendResult.FULL);
            assertThat(v.id(mb.tryRecv())).isZero();
            assertThat(mb.offer(v.message(5))).isEqualTo(SendResult.OK);
            mb.close();
            assertThat(mb.offer(v.message(6))).isEqualTo(SendResult.CLOSED);
            // what was admitted stays receivable, in order
            assertThat(v.id(mb.tryRecv())).isEqualTo(1L);
            assertThat(v.id(mb.tryRecv())).isEqualTo(2L);
            assertThat(v.id(mb.tryRecv())).isEqualTo(3L);
            assertThat(v.id(mb.tryRecv())).isEqualTo(5L);
            assertThat(mb.tryRecv()).isNull();
            assertThat(mb.isTerminated()).isTrue();
        }

        @ParameterizedTest(name = "{0}")
        @MethodSource("dev.mighty.mailbox.OfferTest#variants")
        void shouldAnswerClosedWhenClosedExceptionally(MailboxVariant v) {
            final Mailbox<Object> mb = v.create(4);
            mb.closeExceptionally(new IllegalStateException("boom"));
            assertThat(mb.offer(v.message(0))).isEqualTo(SendResult.CLOSED);
        }

        @ParameterizedTest(name = "{0}")
        @MethodSource("dev.mighty.mailbox.OfferTest#variants")
        void shouldThrowNullPointerExceptionWhenOfferedNull(MailboxVariant v) {
            final Mailbox<Object> mb = v.create(4);
            assertThatThrownBy(() -> mb.offer(null)).isInstanceOf(NullPointerException.class);
            assertThat(mb.size()).isZero();
        }

        @ParameterizedTest(name = "{0}")
        @MethodSource("dev.mighty.mailbox.OfferTest#variants")
        void shouldCountAsTrySendCountsWhenRefusedOrRejected(MailboxVariant v) {
            final Mailbox<Object> mb = v.create(1);
            assertThat(mb.offer(v.message(0))).isEqualTo(SendResult.OK);
            assertThat(mb.offer(v.message(1))).isEqualTo(SendResult.FULL);
            assertThat(mb.offer(v.message(2))).isEqualTo(SendResult.FULL);
            mb.close();
            assertThat(mb.offer(v.message(3))).isEqualTo(SendResult.CLOSED);
            final MailboxStats stats = mb.stats();
            assertThat(stats.refused()).isEqualTo(2L);
            assertThat(stats.rejectedClosed()).isEqualTo(1L);
        }
    }

    @Nested
    class TrySendKeepsItsContract {

        @Test
        void shouldStillThrowMailboxClosedExceptionWhenTrySendOnAClosedMailbox() {
            final Mailbox<String> mb = Mailboxes.bounded(2);
            mb.close();
            assertThatThrownBy(() -> mb.trySend("x")).isInstanceOf(MailboxClosedException.class);
            assertThat(mb.offer("x")).isEqualTo(SendResult.CLOSED);
        }
    }

    @Nested
    class MailboxIsAutoCloseable {

        @Test
        void shouldCloseAndKeepTheMessagesWhenUsedInTryWithResources() {
            final Mailbox<String> outer;
            try (Mailbox<String> mb = Mailboxes.bounded(2)) { // close() declares no checked exception
                outer = mb;
                assertThat(mb.offer("kept")).isEqualTo(SendResult.OK);
            }
            assertThat(outer.isClosed()).isTrue();
            assertThat(outer.tryRecv()).isEqualTo("kept");
            assertThat(outer.isTerminated()).isTrue();
        }
    }
}

package dev.mighty.mailbox.rs;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.SpecProbes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;

@Timeout(300)
@ExtendWith(SpecProbes.class)
class MailboxProcessorTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    private static List<Integer> range(int from, int to) {
        return IntStream.range(from, to).boxed().collect(Collectors.toList());
    }

    @Test
    void shouldPassEverythingThroughInOrderWhenTheMailboxIsSmallerThanTheStream() {
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(Mailboxes.bounded(8), 3);
        Flux.range(0, 1_000).subscribe(processor);
        StepVerifier.create(processor)
                .expectNextSequence(range(0, 1_000))
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldPassEverythingThroughWhenUpstreamAndDownstreamRunOnOtherThreads() {
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(Mailboxes.bounded(16));
        Flux.range(0, 20_000).publishOn(Schedulers.single(), 32).subscribe(processor);
        StepVerifier.create(Flux.from(processor).publishOn(Schedulers.parallel()).limitRate(7))
                .expectNextSequence(range(0, 20_000))
                .expectComplete()
                .verify(TIMEOUT);
    }

    @Test
    void shouldCancelTheUpstreamAndCloseTheMailboxWhenTheDownstreamCancels() {
        final Mailbox<Integer> mailbox = Mailboxes.bounded(8);
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(mailbox);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(processor);
        upstream.next(1, 2, 3, 4, 5);
        StepVerifier.create(processor, 0)
                .thenRequest(2)
                .expectNext(1, 2)
                .thenCancel()
                .verify(TIMEOUT);
        upstream.assertCancelled();
        assertThat(mailbox.isClosed()).isTrue();
        // what is in the mailbox stays receivable
        StepVerifier.create(processor).expectNext(3, 4, 5).expectComplete().verify(TIMEOUT);
    }

    @Test
    void shouldSignalTheUpstreamErrorAfterTheDataBeforeIt() {
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(Mailboxes.bounded(8));
        final IllegalStateException boom = new IllegalStateException("boom");
        Flux.just(1, 2).concatWith(Flux.error(boom)).subscribe(processor);
        StepVerifier.create(processor, 0)
                .thenRequest(1)
                .expectNext(1)
                .thenRequest(1)
                .expectNext(2)
                .expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
                .verify(TIMEOUT);
    }

    @Test
    void shouldRefuseASecondLiveSubscriber() {
        final MailboxProcessor<Integer> processor = new MailboxProcessor<>(Mailboxes.bounded(8));
        final CheckingSubscriber<Integer> first = new CheckingSubscriber<>(0);
        processor.subscribe(first);
        StepVerifier.create(processor).expectSubscription().expectError(IllegalStateException.class).verify(TIMEOUT);
        final TestPublisher<Integer> upstream = TestPublisher.create();
        upstream.subscribe(processor);
        upstream.next(1).complete();
        first.request(1);
        assertThat(first.values).containsExactly(1);
        assertThat(first.completed).isTrue();
        upstream.assertNotCancelled();
    }
}

package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.mighty.mailbox.DocRecipes;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import dev.mighty.mailbox.SendResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Runs the recipes of {@code docs/usage.md}'s "Coming from {@code Sinks.many()}" section; the code between
 * {@code // tag::name[]} and {@code // end::name[]} is what the document shows, character for character (minus the
 * indentation), and {@link #shouldShowEveryRecipeVerbatimInTheUsageDoc()} fails when the two drift apart.
 */
@Timeout(300)
class SinksRecipesTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @Test
    void shouldMigrateInOneLineWhenComingFromSinksMany() throws InterruptedException {
        final Scheduler worker = Schedulers.newSingle("recipe-worker", true);
        try {
            final List<String> received = new CopyOnWriteArrayList<>();
            // tag::sinks-migration[]
            // before: Sinks.many().unicast().onBackpressureBuffer(Queues.<String>get(1024).get())
            Sinks.Many<String> sink = MailboxSinks.many(1024);
            sink.asFlux().publishOn(worker).subscribe(received::add);

            Sinks.EmitResult result = sink.tryEmitNext("hello"); // any thread, many at once: OK, FAIL_OVERFLOW
                                                                 // when full, FAIL_TERMINATED once ended
            sink.emitNext("world", Sinks.EmitFailureHandler.FAIL_FAST); // no busyLooping needed between emitters
            sink.tryEmitComplete();
            // end::sinks-migration[]
            assertThat(result).isEqualTo(Sinks.EmitResult.OK);
            final long deadline = System.nanoTime() + TIMEOUT.toNanos();
            while (received.size() < 2) {
                assertThat(System.nanoTime() - deadline).as("hang: the worker's deliveries").isNegative();
                Thread.sleep(1);
            }
            assertThat(received).containsExactly("hello", "world");
        } finally {
            worker.dispose();
        }
    }

    @Test
    void shouldMixNonBlockingAndBlockingProducersWhenTheyShareTheMailbox() throws InterruptedException {
        // tag::sinks-mix[]
        Mailbox<String> mailbox = Mailboxes.bounded(1024);
        Sinks.Many<String> sink = MailboxSinks.many(mailbox);

        sink.tryEmitNext("from an event loop");        // never blocks: FAIL_OVERFLOW when full
        mailbox.send("from a virtual thread");         // parks while full: never on a Reactor thread
        SendResult sent = mailbox.offer("at shutdown"); // OK, FULL or CLOSED: never throws
        Mono<Void> admitted = MailboxMonos.send(mailbox, "from a pipeline"); // waits for room, blocks nothing

        admitted.then(Mono.fromRunnable(mailbox::close))       // no more sends
                .then(MailboxMonos.terminated(mailbox))        // completes once the consumer drained it
                .subscribe();
        List<String> all = sink.asFlux().collectList().block(); // the consumer
        // end::sinks-mix[]
        assertThat(sent).isEqualTo(SendResult.OK);
        assertThat(all).containsExactly("from an event loop", "from a virtual thread", "at shutdown",
                "from a pipeline");
        assertThat(mailbox.isTerminated()).isTrue();
        assertThat(MailboxMonos.terminated(mailbox).block(TIMEOUT)).isNull();
    }

    @Test
    void shouldResumeWithTheNextSubscriberWhenOneCancels() {
        // tag::sinks-resume[]
        Sinks.Many<Integer> sink = MailboxSinks.many(16);
        for (int i = 0; i < 5; i++) {
            sink.tryEmitNext(i);
        }
        List<Integer> first = sink.asFlux().take(2).collectList().block(); // [0, 1], then a cancel
        Sinks.EmitResult after = sink.tryEmitNext(5);      // OK: a cancel does not end this sink
        sink.tryEmitComplete();
        List<Integer> second = sink.asFlux().collectList().block();        // [2, 3, 4, 5]: resumes
        // end::sinks-resume[]
        assertThat(first).containsExactly(0, 1);
        assertThat(after).isEqualTo(Sinks.EmitResult.OK);
        assertThat(second).containsExactly(2, 3, 4, 5);
    }

    @Test
    void shouldShowEveryRecipeVerbatimInTheUsageDoc() throws IOException {
        DocRecipes.assertShownVerbatim("src/test/java/dev/mighty/mailbox/reactor/SinksRecipesTest.java",
                "docs/usage.md", "sinks-migration", "sinks-mix", "sinks-resume");
    }
}

package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.mighty.mailbox.DocRecipes;
import dev.mighty.mailbox.Hang;
import dev.mighty.mailbox.Mailbox;
import dev.mighty.mailbox.Mailboxes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.Fuseable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.util.context.Context;

/**
 * Runs the recipes of {@code docs/reactor.md}; the code between {@code // tag::name[]} and {@code // end::name[]} is
 * what the page shows, character for character (minus the indentation), and
 * {@link #shouldShowEveryRecipeVerbatimInTheReactorDoc()} fails when the two drift apart.
 */
@Timeout(300)
class ReactorRecipesTest {
    private static final Duration TIMEOUT = Hang.TIMEOUT;

    @Test
    void shouldVerifyTheFusedFaceWithStepVerifier() {
        // tag::step-verifier-fusion[]
        Mailbox<String> mailbox = Mailboxes.bounded(16);
        mailbox.trySend("a");
        mailbox.trySend("b");
        mailbox.close();

        StepVerifier.create(MailboxFlux.from(mailbox))
                .expectFusion(Fuseable.ASYNC)  // the fused face: the verifier polls the mailbox itself
                .expectNext("a", "b")
                .verifyComplete();              // closed and drained
        // end::step-verifier-fusion[]
    }

    @Test
    void shouldVerifyAParkingProducerWithStepVerifier() throws InterruptedException {
        // tag::step-verifier-parking-producer[]
        Mailbox<Integer> mailbox = Mailboxes.bounded(2);
        Thread producer = new Thread(() -> {
            try {
                for (int i = 0; i < 5; i++) {
                    mailbox.send(i);            // parks while the mailbox (2) is full
                }
                mailbox.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        producer.start();

        StepVerifier.create(MailboxFlux.from(mailbox), 0) // no demand: the producer fills 2 slots and parks
                .thenRequest(1).expectNext(0)     // each receive frees a slot: the producer moves on
                .thenRequest(4).expectNext(1, 2, 3, 4)
                .expectComplete()
                .verify(Duration.ofSeconds(30));  // a bound for a hang, not a speed claim
        producer.join();
        // end::step-verifier-parking-producer[]
    }

    @Test
    void shouldResumeWhereItStoppedUnderRetry() {
        // tag::retry-resume[]
        Mailbox<String> mailbox = Mailboxes.bounded(16);
        for (String s : List.of("a", "bad", "c", "d")) {
            mailbox.trySend(s);
        }
        mailbox.close();
        List<String> seen = new CopyOnWriteArrayList<>();

        MailboxFlux.from(mailbox)
                .doOnNext(seen::add)
                .map(s -> {
                    if (s.equals("bad")) {
                        throw new IllegalArgumentException(s); // the subscription is cancelled ...
                    }
                    return s;
                })
                .retry(1)                        // ... and the retry subscribes again: the mailbox resumes
                .blockLast(Duration.ofSeconds(30));

        // seen == [a, bad, c, d]: "bad" counts as delivered (its onNext ran and threw), nothing is seen twice
        // end::retry-resume[]
        assertThat(seen).containsExactly("a", "bad", "c", "d");
    }

    @Test
    void shouldCarryContextInTheMessage() {
        // tag::context[]
        // A Reactor Context belongs to one subscription; the mailbox joins many producers to one consumer, so
        // it does not cross it. Carry what the consumer needs in the message itself.
        record Traced(String traceId, String payload) {
        }
        Mailbox<Traced> mailbox = Mailboxes.bounded(16);
        mailbox.trySend(new Traced("trace-1", "hello"));
        mailbox.close();

        List<String> handled = MailboxFlux.from(mailbox)
                .flatMap(m -> Flux.deferContextual(ctx -> Flux.just(ctx.get("consumer") + "/" + m.traceId()
                                + ": " + m.payload()))
                        .contextWrite(Context.of("traceId", m.traceId()))) // the producer's id, per message
                .contextWrite(Context.of("consumer", "orders"))        // the consumer's own Context
                .collectList()
                .block(Duration.ofSeconds(30));
        // handled == ["orders/trace-1: hello"]
        // end::context[]
        assertThat(handled).containsExactly("orders/trace-1: hello");
    }

    @Test
    void shouldRecoverTheMessageARacingCancelDrops() throws InterruptedException {
        final Scheduler worker = Schedulers.newSingle("recipe-worker", true);
        try {
            // tag::on-discard[]
            Mailbox<String> mailbox = Mailboxes.bounded(16);
            List<String> recovered = new CopyOnWriteArrayList<>();
            List<String> handled = new CopyOnWriteArrayList<>();

            var subscription = MailboxFlux.from(mailbox)
                    .publishOn(worker)                               // fused: it polls the mailbox itself
                    .doOnDiscard(String.class, recovered::add)       // what publishOn polled and could not hand on
                    .subscribe(handled::add);
            mailbox.trySend("a");
            mailbox.trySend("b");
            subscription.dispose(); // a cancel from another thread: at most one polled message is discarded,
                                    // and it lands in 'recovered'; the rest stays in the mailbox
            // end::on-discard[]
            final long deadline = System.nanoTime() + TIMEOUT.toNanos();
            final List<String> rest = new CopyOnWriteArrayList<>();
            // whatever the interleaving: every message handled, recovered or still in the mailbox, once
            while (handled.size() + recovered.size() + rest.size() < 2) {
                assertThat(System.nanoTime() - deadline).as("hang: the worker's last poll").isNegative();
                mailbox.tryRecvMany(rest::add, 16);
                Thread.sleep(1);
            }
            final List<String> all = new CopyOnWriteArrayList<>(handled);
            all.addAll(recovered);
            all.addAll(rest);
            assertThat(all).containsExactlyInAnyOrder("a", "b");
        } finally {
            worker.dispose();
        }
    }

    @Test
    void shouldMulticastWithShare() {
        // tag::share[]
        // One consumer per mailbox; to fan out, share the flux: one subscription to the mailbox, many downstream.
        Mailbox<Integer> mailbox = Mailboxes.bounded(16);
        Flux<Integer> shared = MailboxFlux.from(mailbox).publish().autoConnect(2); // starts at the 2nd subscriber

        List<Integer> first = new CopyOnWriteArrayList<>();
        List<Integer> second = new CopyOnWriteArrayList<>();
        shared.subscribe(first::add);
        shared.subscribe(second::add);
        mailbox.trySend(1);
        mailbox.trySend(2);
        mailbox.close();
        // first == second == [1, 2]
        // end::share[]
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (first.size() < 2 || second.size() < 2) {
            assertThat(System.nanoTime() - deadline).as("hang: the shared deliveries").isNegative();
            Thread.onSpinWait();
        }
        assertThat(first).containsExactly(1, 2);
        assertThat(second).containsExactly(1, 2);
    }

    @Test
    void shouldStateTheVersionsThePomPins() throws Exception {
        final String pom = Files.readString(findUp("pom.xml"), StandardCharsets.UTF_8);
        final String doc = Files.readString(findUp("docs/reactor.md"), StandardCharsets.UTF_8);
        for (String[] row : new String[][] {
                {"Reactive Streams", "reactive-streams.version"}, {"reactor-core", "reactor.version"},
                {"reactor-test", "reactor.version"}, {"Kafka clients", "kafka.version"},
                {"Micrometer", "micrometer.version"}}) {
            final Matcher version = Pattern.compile("<" + Pattern.quote(row[1]) + ">([^<]+)<").matcher(pom);
            assertThat(version.find()).as(row[1]).isTrue();
            assertThat(doc).contains("| " + row[0] + " | " + version.group(1) + " |");
        }
    }

    /** @return {@code name} in the nearest directory above the module that has it (the repository root's) */
    private static Path findUp(String name) {
        for (Path dir = Path.of("").toAbsolutePath().getParent(); dir != null; dir = dir.getParent()) {
            if (Files.exists(dir.resolve(name)) && Files.exists(dir.resolve("docs"))) {
                return dir.resolve(name);
            }
        }
        throw new AssertionError(name + " not found above " + Path.of("").toAbsolutePath());
    }

    @Test
    void shouldShowEveryRecipeVerbatimInTheReactorDoc() throws Exception {
        DocRecipes.assertShownVerbatim("src/test/java/dev/mighty/mailbox/reactor/ReactorRecipesTest.java",
                "docs/reactor.md", "step-verifier-fusion", "step-verifier-parking-producer", "retry-resume",
                "context", "on-discard", "share");
    }
}

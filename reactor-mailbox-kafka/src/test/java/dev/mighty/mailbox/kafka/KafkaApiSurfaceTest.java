package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import dev.mighty.mailbox.ApiSurface;
import org.junit.jupiter.api.Test;

/**
 * The Kafka bridge's public API is what {@code api/reactor-mailbox-kafka.api} records (see the core's
 * {@code ApiSurface}, shared through its test-jar): a change to a public signature, to nullness or to a constant
 * fails here until the file is rewritten and committed with it. Both exported packages are {@code @NullMarked}
 * (JSpecify), as the core's.
 */
class KafkaApiSurfaceTest {
    static final String UPDATE = "mvn -B -pl reactor-mailbox,reactor-mailbox-kafka test "
            + "-Dtest=KafkaApiSurfaceTest -Dsurefire.failIfNoSpecifiedTests=false -Dapi.update=true";

    @Test
    void shouldMatchTheCommittedApiDump() {
        final ApiSurface surface = ApiSurface.of(KafkaMailboxReceiver.class);
        System.out.println(surface.counts());
        surface.check(ApiSurface.moduleDirectory(KafkaMailboxReceiver.class).resolve("api/reactor-mailbox-kafka.api"),
                UPDATE);
    }

    @Test
    void shouldNullMarkEveryExportedPackage() {
        assertThat(ApiSurface.exportedPackagesNotNullMarked(KafkaMailboxReceiver.class))
                .as("exported packages whose package-info lacks @org.jspecify.annotations.NullMarked")
                .isEmpty();
    }
}

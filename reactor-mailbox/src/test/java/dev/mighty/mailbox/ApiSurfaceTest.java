package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The core's public API is what {@code api/reactor-mailbox.api} records (see {@link ApiSurface}): a change to a
 * public signature, to nullness or to a constant fails here until the file is rewritten and committed with it.
 * Every exported package is {@code @NullMarked} (JSpecify), so a type in the API without {@code @Nullable} excludes
 * {@code null}. From 0.1.0 on, japicmp also compares the jar with the last release ({@code -Dapi.baseline}, docs/usage.md).
 */
class ApiSurfaceTest {
    static final String UPDATE = "mvn -B -pl reactor-mailbox test -Dtest=ApiSurfaceTest -Dapi.update=true";

    @Test
    void shouldMatchTheCommittedApiDump() {
        final ApiSurface surface = ApiSurface.of(Mailbox.class);
        System.out.println(surface.counts());
        surface.check(ApiSurface.moduleDirectory(Mailbox.class).resolve("api/reactor-mailbox.api"), UPDATE);
    }

    @Test
    void shouldNullMarkEveryExportedPackage() {
        assertThat(ApiSurface.exportedPackagesNotNullMarked(Mailbox.class))
                .as("exported packages whose package-info lacks @org.jspecify.annotations.NullMarked")
                .isEmpty();
    }
}

package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.reactivestreams.Publisher;

/**
 * The library is a named module, {@code dev.mighty.mailbox}: its descriptor exports the API packages, and
 * {@code internal} only to the Kafka bridge's module, and requires only reactive-streams for real. The other tests
 * run on the class path, where the descriptor is ignored; this one starts a JVM on the module path with the
 * library's classes and reactive-streams only (no reactor-core, micrometer or JCTools), and a small application
 * module, compiled here, that uses the core and the Reactive Streams adapters.
 */
@Timeout(300)
class ModuleDescriptorTest {
    private static final String APP_MODULE = """
            module app {
                requires dev.mighty.mailbox;
            }
            """;
    private static final String APP_MAIN = """
            package app;

            import java.util.ArrayList;
            import java.util.List;

            import dev.mighty.mailbox.Mailbox;
            import dev.mighty.mailbox.Mailboxes;
            import dev.mighty.mailbox.rs.MailboxPublisher;
            import org.reactivestreams.Subscriber;
            import org.reactivestreams.Subscription;

            public final class Main {
                public static void main(String[] args) throws Exception {
                    Mailbox<String> mailbox = Mailboxes.bounded(16);
                    mailbox.send("a");
                    System.out.println("tryRecv " + mailbox.tryRecv());

                    List<String> got = new ArrayList<>();
                    mailbox.trySend("b");
                    mailbox.trySend("c");
                    mailbox.close();
                    new MailboxPublisher<>(mailbox).subscribe(new Subscriber<String>() {
                        @Override
                        public void onSubscribe(Subscription s) {
                            s.request(Long.MAX_VALUE);
                        }

                        @Override
                        public void onNext(String item) {
                            got.add(item);
                        }

                        @Override
                        public void onError(Throwable t) {
                            got.add("error " + t);
                        }

                        @Override
                        public void onComplete() {
                            got.add("complete");
                        }
                    });
                    System.out.println("published " + got);

                    Module library = Mailbox.class.getModule();
                    System.out.println("module " + library.getName());
                    System.out.println("internal exported " + library.isExported("dev.mighty.mailbox.internal"));
                    for (String optional : List.of("reactor.core", "micrometer.core")) {
                        System.out.println(optional + " " + ModuleLayer.boot().findModule(optional).isPresent());
                    }
                    try {
                        Class.forName("org.jctools.queues.MpscArrayQueue");
                        System.out.println("jctools present");
                    } catch (ClassNotFoundException expected) {
                        System.out.println("jctools absent");
                    }
                }
            }
            """;

    @Test
    void shouldExportTheApiPackagesAndInternalOnlyToTheKafkaBridge() {
        final ModuleDescriptor descriptor = libraryModule().descriptor();

        assertThat(descriptor.name()).isEqualTo("dev.mighty.mailbox");
        assertThat(descriptor.isAutomatic()).isFalse();
        assertThat(descriptor.exports()).filteredOn(e -> !e.isQualified())
                .extracting(ModuleDescriptor.Exports::source)
                .containsExactlyInAnyOrder("dev.mighty.mailbox", "dev.mighty.mailbox.rs", "dev.mighty.mailbox.reactor",
                        "dev.mighty.mailbox.micrometer");
        // the Kafka bridge's room wait, until a public room-registration API replaces it (module-info)
        assertThat(descriptor.exports()).filteredOn(ModuleDescriptor.Exports::isQualified)
                .singleElement()
                .satisfies(e -> {
                    assertThat(e.source()).isEqualTo("dev.mighty.mailbox.internal");
                    assertThat(e.targets()).containsExactly("dev.mighty.mailbox.kafka");
                });
        assertThat(descriptor.packages()).contains("dev.mighty.mailbox.internal");
        assertThat(descriptor.opens()).isEmpty();
    }

    @Test
    void shouldRequireOnlyReactiveStreamsAtRunTime() {
        final Map<String, Set<ModuleDescriptor.Requires.Modifier>> requires = libraryModule().descriptor().requires()
                .stream()
                .filter(r -> !r.name().equals("java.base"))
                .collect(Collectors.toMap(ModuleDescriptor.Requires::name, ModuleDescriptor.Requires::modifiers));

        assertThat(requires)
                .containsEntry("org.reactivestreams", Set.of(ModuleDescriptor.Requires.Modifier.TRANSITIVE));
        requires.remove("org.reactivestreams");
        assertThat(requires).as("every other module is optional, and not transitive (a reader would need it)")
                .allSatisfy((name, modifiers) ->
                        assertThat(modifiers).containsExactly(ModuleDescriptor.Requires.Modifier.STATIC))
                .containsKeys("reactor.core", "micrometer.core", "jdk.jfr");
    }

    @Test
    void shouldRunAnApplicationModuleWithoutTheOptionalLibraries(@TempDir Path dir) throws Exception {
        final Path library = location(Mailbox.class);                // target/classes, an exploded module
        final Path reactiveStreams = location(Publisher.class);
        final String modulePath = ChildJvm.path(List.of(library, reactiveStreams));

        final Path src = Files.createDirectories(dir.resolve("src/app"));
        final Path moduleInfo = Files.writeString(dir.resolve("src/module-info.java"), APP_MODULE,
                StandardCharsets.UTF_8);
        final Path main = Files.writeString(src.resolve("Main.java"), APP_MAIN, StandardCharsets.UTF_8);
        final Path out = Files.createDirectories(dir.resolve("app"));
        ChildJvm.compile(out, List.of("--release", "17", "--module-path", modulePath), List.of(moduleInfo, main));

        final ChildJvm.Result result = ChildJvm.run(120, List.of(
                "--module-path", ChildJvm.path(List.of(out, library, reactiveStreams)), "-m", "app/app.Main"));

        assertThat(result.exitCode()).as("exit code; it printed:%n%s", result.output()).isZero();
        assertThat(result.output().lines()).containsExactly(
                "tryRecv a",
                "published [b, c, complete]",
                "module dev.mighty.mailbox",
                "internal exported false",
                "reactor.core false",
                "micrometer.core false",
                "jctools absent");
    }

    private static ModuleReference libraryModule() {
        return ModuleFinder.of(location(Mailbox.class)).find("dev.mighty.mailbox")
                .orElseThrow(() -> new AssertionError("no module dev.mighty.mailbox in " + location(Mailbox.class)));
    }

    private static Path location(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new AssertionError(e);
        }
    }
}

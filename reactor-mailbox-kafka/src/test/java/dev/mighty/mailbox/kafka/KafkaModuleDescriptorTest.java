package dev.mighty.mailbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReader;
import java.lang.module.ModuleReference;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import dev.mighty.mailbox.ChildJvm;
import dev.mighty.mailbox.Mailbox;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.reactivestreams.Publisher;
import org.slf4j.LoggerFactory;

/**
 * The bridge is a JPMS module of its own, {@code dev.mighty.mailbox.kafka}, and the core, {@code dev.mighty.mailbox},
 * has no Kafka in it: no package, no class, no requires, and one export naming this module (the qualified export of
 * {@code internal} for the room wait, until a public room-registration API replaces it). The tests run on the class
 * path, where descriptors are ignored; the last one starts a JVM on the module path and builds a receiver there,
 * which reaches {@code internal} through that export.
 */
@Timeout(300)
class KafkaModuleDescriptorTest {
    private static final String CORE = "dev.mighty.mailbox";
    private static final String BRIDGE = "dev.mighty.mailbox.kafka";

    @Nested
    class TheCore {
        @Test
        void shouldNeitherRequireNorExportAnythingKafkaButInternalToTheBridge() {
            final ModuleDescriptor descriptor = module(location(Mailbox.class), CORE).descriptor();

            assertThat(descriptor.requires()).extracting(ModuleDescriptor.Requires::name)
                    .noneMatch(name -> name.contains("kafka"));
            assertThat(descriptor.exports()).filteredOn(e -> !e.isQualified())
                    .extracting(ModuleDescriptor.Exports::source)
                    .noneMatch(source -> source.contains("kafka"));
            assertThat(descriptor.exports()).filteredOn(ModuleDescriptor.Exports::isQualified)
                    .singleElement()
                    .satisfies(e -> {
                        assertThat(e.source()).isEqualTo(CORE + ".internal");
                        assertThat(e.targets()).containsExactly(BRIDGE);
                    });
            assertThat(descriptor.opens()).isEmpty();
            assertThat(descriptor.packages()).noneMatch(p -> p.contains("kafka"));
        }

        @Test
        void shouldHoldNoClassInAKafkaPackageNorReferToKafka() throws IOException {
            final ModuleReference core = module(location(Mailbox.class), CORE);
            final List<String> classes;
            final List<String> referring = new ArrayList<>();
            try (ModuleReader reader = core.open()) {
                classes = reader.list().filter(name -> name.endsWith(".class")).collect(Collectors.toList());
                for (String name : classes) {
                    try (InputStream in = reader.open(name).orElseThrow()) {
                        // a class that names a Kafka type holds its binary name in the constant pool
                        if (new String(in.readAllBytes(), StandardCharsets.ISO_8859_1).contains("org/apache/kafka")) {
                            referring.add(name);
                        }
                    }
                }
            }

            assertThat(classes).as("the core's classes").isNotEmpty()
                    .noneMatch(name -> name.toLowerCase(Locale.ROOT).contains("kafka"));
            assertThat(referring).as("core classes that name an org.apache.kafka type").isEmpty();
        }
    }

    @Nested
    class TheBridge {
        @Test
        void shouldExportItsTwoPackagesAndRequireTheCoreAndKafkaClients() {
            final ModuleDescriptor descriptor = module(location(KafkaMailboxReceiver.class), BRIDGE).descriptor();

            assertThat(descriptor.isAutomatic()).isFalse();
            assertThat(descriptor.exports()).allMatch(e -> !e.isQualified())
                    .extracting(ModuleDescriptor.Exports::source)
                    .containsExactlyInAnyOrder(BRIDGE, BRIDGE + ".micrometer");
            assertThat(descriptor.opens()).isEmpty();
            final Map<String, Set<ModuleDescriptor.Requires.Modifier>> requires = descriptor.requires().stream()
                    .filter(r -> !r.name().equals("java.base"))
                    .collect(Collectors.toMap(ModuleDescriptor.Requires::name, ModuleDescriptor.Requires::modifiers));
            assertThat(requires).containsOnly(
                    Map.entry(CORE, Set.of(ModuleDescriptor.Requires.Modifier.TRANSITIVE)),
                    Map.entry("kafka.clients", Set.of(ModuleDescriptor.Requires.Modifier.TRANSITIVE)),
                    Map.entry("reactor.core", Set.of(ModuleDescriptor.Requires.Modifier.STATIC)),
                    Map.entry("micrometer.core", Set.of(ModuleDescriptor.Requires.Modifier.STATIC)),
                    Map.entry("jdk.jfr", Set.of(ModuleDescriptor.Requires.Modifier.STATIC)),
                    Map.entry("org.jspecify", Set.of(ModuleDescriptor.Requires.Modifier.STATIC)));
        }

        @Test
        void shouldBuildAReceiverOnTheModulePathWithoutReactor(@TempDir Path dir) throws Exception {
            final List<Path> libraries = List.of(location(Mailbox.class), location(KafkaMailboxReceiver.class),
                    location(Publisher.class), location(KafkaConsumer.class), location(LoggerFactory.class));
            final Path src = Files.createDirectories(dir.resolve("src/app"));
            final Path moduleInfo = Files.writeString(dir.resolve("src/module-info.java"), APP_MODULE,
                    StandardCharsets.UTF_8);
            final Path main = Files.writeString(src.resolve("Main.java"), APP_MAIN, StandardCharsets.UTF_8);
            final Path out = Files.createDirectories(dir.resolve("app"));
            ChildJvm.compile(out, List.of("--release", "17", "--module-path", ChildJvm.path(libraries)),
                    List.of(moduleInfo, main));

            final List<Path> modulePath = new ArrayList<>(libraries);
            modulePath.add(0, out);
            // kafka-clients is an automatic module that logs through slf4j: nothing requires org.slf4j by name
            final ChildJvm.Result result = ChildJvm.run(120, List.of(
                    "--module-path", ChildJvm.path(modulePath), "--add-modules", "org.slf4j", "-m", "app/app.Main"));

            assertThat(result.exitCode()).as("exit code; it printed:%n%s", result.output()).isZero();
            assertThat(result.output().lines()).as("it printed:%n%s", result.output()).containsSubsequence(
                    "capacity 64",
                    "module " + BRIDGE,
                    "internal exported false",
                    "internal exported to the bridge true",
                    "reactor.core false");
        }
    }

    private static final String APP_MODULE = """
            module app {
                requires dev.mighty.mailbox.kafka;
            }
            """;
    private static final String APP_MAIN = """
            package app;

            import java.time.Duration;
            import java.util.List;
            import java.util.Map;

            import dev.mighty.mailbox.Mailbox;
            import dev.mighty.mailbox.kafka.KafkaMailboxReceiver;
            import org.apache.kafka.clients.consumer.ConsumerConfig;
            import org.apache.kafka.common.serialization.StringDeserializer;

            public final class Main {
                public static void main(String[] args) {
                    // the constructor wraps its mailbox's ring (dev.mighty.mailbox.internal): the qualified export
                    KafkaMailboxReceiver<String, String> receiver = KafkaMailboxReceiver.<String, String>builder(Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9",
                            ConsumerConfig.GROUP_ID_CONFIG, "module-path",
                            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))
                            .topics(List.of("module-path"))
                            .capacity(64)
                            .build();
                    System.out.println("capacity " + receiver.mailbox().capacity());
                    receiver.close(Duration.ofSeconds(5)); // never started: nothing to wait for

                    Module core = Mailbox.class.getModule();
                    Module bridge = KafkaMailboxReceiver.class.getModule();
                    System.out.println("module " + bridge.getName());
                    System.out.println("internal exported " + core.isExported("dev.mighty.mailbox.internal"));
                    System.out.println("internal exported to the bridge "
                            + core.isExported("dev.mighty.mailbox.internal", bridge));
                    System.out.println("reactor.core " + ModuleLayer.boot().findModule("reactor.core").isPresent());
                }
            }
            """;

    private static ModuleReference module(Path location, String name) {
        return ModuleFinder.of(location).find(name)
                .orElseThrow(() -> new AssertionError("no module " + name + " in " + location));
    }

    /** @return the jar or class directory that {@code type} was loaded from */
    private static Path location(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new AssertionError(e);
        }
    }
}

package dev.mighty.mailbox.kafka;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.MetadataVersion;

/**
 * One in-process Kafka 4.x node in KRaft mode (broker and controller combined, no ZooKeeper, no Docker) on free
 * localhost ports, with its log directory under {@code java.io.tmpdir} (which the build points at
 * {@code target/}). The test classes share one through {@link SharedKafka}. Public, in this module's test-jar
 * (classifier {@code tests}), for bench's Kafka benchmark.
 *
 * <p>Traps it avoids:
 * <ul>
 *   <li>Kafka's {@code Exit} procedures are replaced, so a broker fault throws instead of ending the test JVM;</li>
 *   <li>right after {@code createTopics}, Kafka 4.4 can lose the first produced batch (KAFKA-15591):
 *       {@link #createTopic} returns only once {@code listOffsets} answers for every partition.</li>
 * </ul>
 */
public final class EmbeddedKafka implements AutoCloseable {
    private static final Duration ADMIN_WAIT = Duration.ofSeconds(60);

    private final Path logDir;
    private final KafkaRaftServer server;
    private final String bootstrapServers;
    private final Admin admin;

    private EmbeddedKafka(Path logDir, KafkaRaftServer server, String bootstrapServers) {
        this.logDir = logDir;
        this.server = server;
        this.bootstrapServers = bootstrapServers;
        final Map<String, Object> config = new HashMap<>();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        this.admin = Admin.create(config);
    }

    /** Formats a fresh log directory and starts a node on it. */
    public static EmbeddedKafka start() throws Exception {
        Exit.setExitProcedure((code, message) -> {
            throw new IllegalStateException("Kafka called Exit.exit(" + code + "): " + message);
        });
        Exit.setHaltProcedure((code, message) -> {
            throw new IllegalStateException("Kafka called Exit.halt(" + code + "): " + message);
        });
        final Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
        Files.createDirectories(tmp);
        final Path logDir = Files.createTempDirectory(tmp, "kafka-");
        final int brokerPort = freePort();
        final int controllerPort = freePort();
        final Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "1@localhost:" + controllerPort);
        props.put("listeners", "PLAINTEXT://localhost:" + brokerPort + ",CONTROLLER://localhost:" + controllerPort);
        props.put("advertised.listeners", "PLAINTEXT://localhost:" + brokerPort);
        props.put("controller.listener.names", "CONTROLLER");
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", logDir.toString());
        props.put("num.partitions", "1");
        props.put("auto.create.topics.enable", "false");
        props.put("offsets.topic.replication.factor", "1");
        props.put("offsets.topic.num.partitions", "1");
        props.put("transaction.state.log.replication.factor", "1");
        props.put("transaction.state.log.min.isr", "1");
        props.put("share.coordinator.state.topic.replication.factor", "1");
        props.put("share.coordinator.state.topic.min.isr", "1");
        props.put("group.initial.rebalance.delay.ms", "0");
        // the KIP-848 'consumer' protocol moves partitions at heartbeats: 500 ms instead of 5 s keeps its test short
        props.put("group.consumer.heartbeat.interval.ms", "500");
        props.put("group.consumer.min.heartbeat.interval.ms", "500");
        // share groups (KIP-932, KafkaShareReceiverTest): a group may set a lock as short as 1 s (the broker's floor),
        // and members heartbeat every 500 ms; no other test uses a share group, so nothing else changes
        props.put("group.share.min.record.lock.duration.ms", "1000");
        props.put("group.share.min.heartbeat.interval.ms", "500");
        props.put("group.share.heartbeat.interval.ms", "500");
        props.put("num.network.threads", "2");
        props.put("num.io.threads", "2");

        new Formatter()
                .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                .setNodeId(1)
                .setClusterId(Uuid.randomUuid().toString())
                .setDirectories(List.of(logDir.toString()))
                .setMetadataLogDirectory(logDir.toString())
                .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                .setSupportedFeatures(Feature.PRODUCTION_FEATURES)
                .setControllerListenerName("CONTROLLER")
                .run();

        final KafkaRaftServer server = new KafkaRaftServer(new KafkaConfig(props, false), Time.SYSTEM);
        try {
            server.startup();
        } catch (RuntimeException e) {
            deleteQuietly(logDir);
            throw e;
        }
        return new EmbeddedKafka(logDir, server, "localhost:" + brokerPort);
    }

    public String bootstrapServers() {
        return bootstrapServers;
    }

    public Admin admin() {
        return admin;
    }

    /**
     * Creates a topic and returns once every partition answers {@code listOffsets} (KAFKA-15591: a batch produced
     * before that can be lost).
     */
    public void createTopic(String topic, int partitions) throws Exception {
        createTopic(topic, partitions, Map.of());
    }

    /** As {@link #createTopic(String, int)}, with topic configs (e.g. {@code max.message.bytes}). */
    public void createTopic(String topic, int partitions, Map<String, String> configs) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all()
                .get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        final Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            request.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        final long deadline = System.nanoTime() + ADMIN_WAIT.toNanos();
        for (;;) {
            try {
                admin.listOffsets(request).all().get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                return;
            } catch (ExecutionException notYet) {
                if (System.nanoTime() - deadline > 0) {
                    throw notYet;
                }
                Thread.sleep(20);
            }
        }
    }

    /**
     * Sets group-level configs of {@code groupId} (Admin {@code incrementalAlterConfigs} on the GROUP resource), e.g.
     * {@code share.auto.offset.reset=earliest} and {@code share.record.lock.duration.ms} for a share group. The
     * group need not exist yet.
     */
    public void alterGroupConfigs(String groupId, Map<String, String> configs) throws Exception {
        final List<AlterConfigOp> ops = new java.util.ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, groupId), ops)).all()
                .get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** @return the log end offset of every partition of {@code topic} */
    public Map<TopicPartition, Long> endOffsets(String topic, int partitions) throws Exception {
        final Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            request.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        final Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> answer =
                admin.listOffsets(request).all().get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        final Map<TopicPartition, Long> ends = new HashMap<>();
        answer.forEach((tp, info) -> ends.put(tp, info.offset()));
        return ends;
    }

    /** @return what {@code groupId} has committed, with the leader epochs (partitions without a commit are absent) */
    public Map<TopicPartition, OffsetAndMetadata> committedMetadata(String groupId) throws Exception {
        final Map<TopicPartition, OffsetAndMetadata> answer = admin.listConsumerGroupOffsets(groupId)
                .partitionsToOffsetAndMetadata().get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        final Map<TopicPartition, OffsetAndMetadata> committed = new HashMap<>();
        answer.forEach((tp, om) -> {
            if (om != null) {
                committed.put(tp, om);
            }
        });
        return committed;
    }

    /** @return how many members {@code groupId} has now (0 for an empty or unknown group) */
    int members(String groupId) throws Exception {
        return admin.describeConsumerGroups(java.util.List.of(groupId)).describedGroups().get(groupId)
                .get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS).members().size();
    }

    /** @return the offsets {@code groupId} has committed (partitions without a commit are absent) */
    public Map<TopicPartition, Long> committed(String groupId) throws Exception {
        final Map<TopicPartition, OffsetAndMetadata> answer = admin.listConsumerGroupOffsets(groupId)
                .partitionsToOffsetAndMetadata().get(ADMIN_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        final Map<TopicPartition, Long> committed = new HashMap<>();
        answer.forEach((tp, om) -> {
            if (om != null) {
                committed.put(tp, om.offset());
            }
        });
        return committed;
    }

    @Override
    public void close() {
        try {
            admin.close(Duration.ofSeconds(10));
        } finally {
            try {
                server.shutdown();
                server.awaitShutdown();
            } finally {
                deleteQuietly(logDir);
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        }
    }

    private static void deleteQuietly(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // a leftover directory under target/ is harmless; 'mvn clean' removes it
        }
    }
}

package dev.mighty.mailbox.kafka;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Resolves an {@link EmbeddedKafka} parameter with one broker for the whole test run: started by the first class
 * that asks, kept in the root store, closed by JUnit when the run ends (it is {@code AutoCloseable}). The broker
 * takes seconds to start and to stop on a busy 2-core machine, so the Kafka test classes share it; each test uses
 * its own topics and groups.
 * <pre>{@code
 * @ExtendWith(SharedKafka.class)
 * class FooTest {
 *     private static EmbeddedKafka kafka;
 *
 *     @BeforeAll
 *     static void broker(EmbeddedKafka broker) {
 *         kafka = broker;
 *     }
 * }
 * }</pre>
 */
final class SharedKafka implements ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(SharedKafka.class);

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == EmbeddedKafka.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return context.getRoot().getStore(NAMESPACE).getOrComputeIfAbsent("broker", key -> {
            try {
                return EmbeddedKafka.start();
            } catch (Exception e) {
                throw new IllegalStateException("the embedded Kafka broker did not start", e);
            }
        }, EmbeddedKafka.class);
    }
}

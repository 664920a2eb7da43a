package dev.mighty.mailbox.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.mighty.mailbox.HidingClassLoader;
import dev.mighty.mailbox.Mailbox;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code reactor-core} is an optional dependency: the core ({@code dev.mighty.mailbox}) and the Reactive
 * Streams adapters ({@code dev.mighty.mailbox.rs}) must load and work without it. The classes under test are
 * loaded, child-first, by a loader that sees only {@code target/classes} and the one compile dependency
 * (reactive-streams; JCTools is a test dependency only), whose parent is the platform loader (so nothing of the
 * test class path leaks in), and that refuses {@code reactor.*} outright. Everything is then driven by reflection, and the Reactive
 * Streams subscriber is a {@link Proxy} of that loader's {@code Subscriber} interface.
 */
@Timeout(300)
class ReactorOptionalTest {

    @Test
    void shouldHideReactorAndTheTestClassPathWhenLoadingThroughTheFilteringLoader() throws Exception {
        try (HidingClassLoader loader = HidingClassLoader.without("reactor.", "reactor-core")) {
            assertThatThrownBy(() -> Class.forName("reactor.core.publisher.Flux", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
            // the Reactor glue needs reactor-core: it cannot be linked here
            assertThatThrownBy(() -> Class.forName("dev.mighty.mailbox.reactor.MailboxFlux", true, loader))
                    .isInstanceOf(NoClassDefFoundError.class);
            assertThat(loader.refused).anyMatch(name -> name.startsWith("reactor.core"));
            // the loader's Mailbox is its own, not the test's
            assertThat(Class.forName("dev.mighty.mailbox.Mailbox", false, loader)).isNotSameAs(Mailbox.class);
            // and the test class path (junit, assertj, reactor-test) is not visible either
            assertThatThrownBy(() -> Class.forName("org.junit.jupiter.api.Test", false, loader))
                    .isInstanceOf(ClassNotFoundException.class);
        }
    }

    @Test
    void shouldSendReceiveAndPublishWhenReactorIsNotOnTheClassPath() throws Exception {
        try (HidingClassLoader loader = HidingClassLoader.without("reactor.", "reactor-core")) {
            final Class<?> mailboxes = Class.forName("dev.mighty.mailbox.Mailboxes", true, loader);
            final Class<?> mailboxType = Class.forName("dev.mighty.mailbox.Mailbox", true, loader);
            final Object mailbox = mailboxes.getMethod("bounded", int.class).invoke(null, 16);

            // the core: send, receive, batched receive
            final Method trySend = mailboxType.getMethod("trySend", Object.class);
            assertThat(trySend.invoke(mailbox, "a")).isEqualTo(true);
            assertThat(mailboxType.getMethod("tryRecv").invoke(mailbox)).isEqualTo("a");
            // the non-throwing send and its result type are core too
            assertThat(mailboxType.getMethod("offer", Object.class).invoke(mailbox, "b").toString()).isEqualTo("OK");
            assertThat(mailboxType.getMethod("tryRecv").invoke(mailbox)).isEqualTo("b");
            for (int i = 0; i < 5; i++) {
                trySend.invoke(mailbox, "m" + i);
            }
            final List<Object> batch = new CopyOnWriteArrayList<>();
            final Consumer<Object> sink = batch::add;
            assertThat(mailboxType.getMethod("tryRecvMany", Consumer.class, int.class).invoke(mailbox, sink, 2))
                    .isEqualTo(2);
            assertThat(batch).containsExactly("m0", "m1");

            // the rs package: a plain Reactive Streams subscriber on MailboxPublisher
            final Class<?> publisherType = Class.forName("dev.mighty.mailbox.rs.MailboxPublisher", true, loader);
            final Object publisher = publisherType.getConstructor(mailboxType).newInstance(mailbox);
            final Class<?> subscriberType = Class.forName("org.reactivestreams.Subscriber", true, loader);
            final Class<?> subscriptionType = Class.forName("org.reactivestreams.Subscription", true, loader);
            final List<Object> received = new CopyOnWriteArrayList<>();
            final AtomicReference<String> terminal = new AtomicReference<>();
            final InvocationHandler handler = (proxy, method, args) -> {
                switch (method.getName()) {
                    case "onSubscribe":
                        subscriptionType.getMethod("request", long.class).invoke(args[0], Long.MAX_VALUE);
                        return null;
                    case "onNext":
                        received.add(args[0]);
                        return null;
                    case "onError":
                        terminal.set("error: " + args[0]);
                        return null;
                    case "onComplete":
                        terminal.set("complete");
                        return null;
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    case "equals":
                        return proxy == args[0];
                    case "toString":
                        return "proxy subscriber";
                    default:
                        throw new UnsupportedOperationException(method.getName());
                }
            };
            final Object subscriber = Proxy.newProxyInstance(loader, new Class<?>[] {subscriberType}, handler);
            publisherType.getMethod("subscribe", subscriberType).invoke(publisher, subscriber);
            assertThat(received).containsExactly("m2", "m3", "m4"); // drained on the subscribing thread
            trySend.invoke(mailbox, "late");                         // wakes the subscription on this thread
            mailboxType.getMethod("close").invoke(mailbox);
            assertThat(received).containsExactly("m2", "m3", "m4", "late");
            assertThat(terminal.get()).isEqualTo("complete");
            assertThat(loader.refused).isEmpty(); // nothing in the core or rs packages even asked for reactor
        }
    }
}

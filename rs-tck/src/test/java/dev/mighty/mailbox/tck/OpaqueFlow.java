package dev.mighty.mailbox.tck;

import java.util.concurrent.Flow;

/**
 * Forwarding {@link Flow} objects that {@code FlowAdapters} cannot see through.
 *
 * <p>Why: {@code FlowAdapters} unwraps its own adapters. {@code toFlowPublisher(p)} returns a
 * {@code FlowPublisherFromReactive}, and the {@code toPublisher} that {@code FlowPublisherVerification} applies to
 * it hands back {@code p} itself; the same holds for subscribers and processors. Wired naively, the "Flow"
 * verifications would test the Reactive Streams object again and never cross the Flow interfaces. Behind these
 * forwarders every signal really goes TCK (Reactive Streams) &rarr; {@code FlowAdapters} &rarr; {@code Flow}
 * &rarr; {@code FlowAdapters} &rarr; our adapter, and back, as it does for a JDK {@code Flow} user.
 */
final class OpaqueFlow {
    private OpaqueFlow() {
    }

    static <T> Flow.Publisher<T> publisher(Flow.Publisher<T> publisher) {
        return new Flow.Publisher<T>() {
            @Override
            public void subscribe(Flow.Subscriber<? super T> subscriber) {
                publisher.subscribe(subscriber);
            }

            @Override
            public String toString() {
                return "OpaqueFlow.publisher[" + publisher + "]";
            }
        };
    }

    static <T> Flow.Subscriber<T> subscriber(Flow.Subscriber<T> subscriber) {
        return new ForwardingSubscriber<>(subscriber);
    }

    static <T> Flow.Processor<T, T> processor(Flow.Processor<T, T> processor) {
        return new ForwardingProcessor<>(processor);
    }

    private static class ForwardingSubscriber<T> implements Flow.Subscriber<T> {
        private final Flow.Subscriber<T> target;

        ForwardingSubscriber(Flow.Subscriber<T> target) {
            this.target = target;
        }

        @Override
        public void onSubscribe(Flow.Subscription subscription) {
            target.onSubscribe(subscription);
        }

        @Override
        public void onNext(T item) {
            target.onNext(item);
        }

        @Override
        public void onError(Throwable throwable) {
            target.onError(throwable);
        }

        @Override
        public void onComplete() {
            target.onComplete();
        }

        @Override
        public String toString() {
            return "OpaqueFlow.subscriber[" + target + "]";
        }
    }

    private static final class ForwardingProcessor<T> extends ForwardingSubscriber<T>
            implements Flow.Processor<T, T> {
        private final Flow.Processor<T, T> processor;

        ForwardingProcessor(Flow.Processor<T, T> processor) {
            super(processor);
            this.processor = processor;
        }

        @Override
        public void subscribe(Flow.Subscriber<? super T> subscriber) {
            processor.subscribe(subscriber);
        }

        @Override
        public String toString() {
            return "OpaqueFlow.processor[" + processor + "]";
        }
    }
}

/**
 * The JMH suite. Every class states its run settings ({@code @BenchmarkMode}, {@code @OutputTimeUnit},
 * {@code @Warmup}, {@code @Measurement}, {@code @Fork}) and fits 2 cores; each ends with a "How to run"
 * comment and a {@code main}. The one-producer/one-consumer classes move 10,000 messages per operation
 * ({@code @OperationsPerInvocation(10000)}, so scores are per message) through a channel of capacity 1024,
 * the producer being a thread of {@link dev.mighty.mailbox.bench.jmh.OneToOneState} and the consumer the
 * benchmark thread.
 */
package dev.mighty.mailbox.bench.jmh;

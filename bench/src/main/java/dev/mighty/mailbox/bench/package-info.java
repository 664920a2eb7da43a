/**
 * Benchmarks of reactor-mailbox: the {@code mailbox_throughput} CLI ({@code .cli}) and the JMH suite
 * ({@code .jmh}), plus the few harness pieces both use. Not API.
 */
package dev.mighty.mailbox.bench;

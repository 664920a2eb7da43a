/**
 * The {@code mailbox_throughput} runner: {@link dev.mighty.mailbox.bench.cli.MailboxThroughput}, the
 * workloads it measures side by side ({@code Workloads}) and the two-thread harness that runs them.
 */
package dev.mighty.mailbox.bench.cli;

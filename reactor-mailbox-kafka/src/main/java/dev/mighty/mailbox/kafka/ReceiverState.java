package dev.mighty.mailbox.kafka;

/**
 * The states of a {@link KafkaMailboxReceiver}, held in an {@code AtomicReference} (compared by identity):
 * NEW, then RUNNING ({@code start}), STOPPING (the first close, or the poll thread stopping by itself), CLOSED
 * (the poll thread finished, or a close before {@code start}, or a failed {@code start}).
 */
enum ReceiverState {
    NEW("new"),
    RUNNING("running"),
    STOPPING("stopping"),
    CLOSED("closed");

    private final String label;

    ReceiverState(String label) {
        this.label = label;
    }

    @Override
    public String toString() {
        return label;
    }
}

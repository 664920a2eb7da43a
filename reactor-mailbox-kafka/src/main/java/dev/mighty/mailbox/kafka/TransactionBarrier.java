package dev.mighty.mailbox.kafka;

/**
 * The receiver's view of the exactly-once face's transactions, for its waits: a revocation and a close let the open
 * transaction end (its commit runs on the poll thread, as a consumer task) before they go on.
 */
interface TransactionBarrier {
    /**
     * Poll thread: runs consumer tasks (a transaction's barrier among them) until no transaction is open, or the
     * deadline.
     */
    void awaitIdle(long deadline);

    /** @return whether a transaction is open: its barrier may come at any moment (any thread) */
    boolean isOpen();
}

package dev.mighty.mailbox;

/**
 * Receives frames from {@link FrameMailbox#tryRecvFrames} and {@link FrameMailbox#recvFrames} without
 * allocating: the {@link FrameView} is a flyweight over the slot, valid only inside {@link #onFrame}.
 */
@FunctionalInterface
public interface FrameHandler {
    /**
     * Handles one frame. The slot is freed when this returns (or throws: the frame then counts as received
     * and the exception propagates).
     *
     * <p><b>WARNING:</b> {@code frame} is reused for the next frame; copy what you keep
     * ({@link FrameView#getPayload(byte[], int)}, {@link FrameView#toFrame()}). A receive from the same mailbox
     * inside this method throws {@link IllegalStateException}: the slot being handled is still the current one.
     */
    void onFrame(FrameView frame);
}

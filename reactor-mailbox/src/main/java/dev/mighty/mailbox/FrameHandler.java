package dev.mighty.mailbox;

/**
 * Receives frames from {@link FrameMailbox#tryRecvFrames} and {@link FrameMailbox#recvFrames} without
 * allocating: the {@link FrameView} is a flyweight over the slot, valid only inside {@link #onFrame}.
 */
@FunctionalInterface
public interface FrameHandler {
    /**
     * Handles one frame, on the thread that called the receive. The slot is freed when this returns (or throws:
     * the frame then counts as received and the exception propagates).
     *
     * <p><b>WARNING:</b> {@code frame} is reused for the next frame; copy what you keep
     * ({@link FrameView#getPayload(byte[], int)}, {@link FrameView#toFrame()}). A receive from the same mailbox
     * inside this method throws {@link IllegalStateException}: the slot being handled is still the current one.
     *
     * @param frame the current frame: a flyweight, valid only until this method returns
     */
    void onFrame(FrameView frame);
}

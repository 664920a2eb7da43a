package dev.mighty.mailbox.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** Access to reference-array slots with explicit memory modes (JCTools {@code UnsafeRefArrayAccess}). */
public final class RefArray {
    private static final VarHandle ELEMENT = MethodHandles.arrayElementVarHandle(Object[].class);

    private RefArray() {
    }

    /** getAcquire */
    public static Object laRefElement(Object[] buffer, int offset) {
        return ELEMENT.getAcquire(buffer, offset);
    }

    /** setRelease */
    public static void soRefElement(Object[] buffer, int offset, Object e) {
        ELEMENT.setRelease(buffer, offset, e);
    }

    /** plain write */
    public static void spRefElement(Object[] buffer, int offset, Object e) {
        ELEMENT.set(buffer, offset, e);
    }
}

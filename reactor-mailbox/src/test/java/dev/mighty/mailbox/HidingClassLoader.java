package dev.mighty.mailbox;

import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.reactivestreams.Publisher;

/**
 * For the tests that prove an optional dependency is optional: a class loader that sees only the library's
 * {@code target/classes} and its one compile dependency (reactive-streams), whose parent is the platform
 * loader (so nothing of the test class path leaks in), and that refuses every class under one package prefix
 * outright, recording each attempt. Classes load child-first from those three locations.
 */
public final class HidingClassLoader extends URLClassLoader {
    /** Every class name this loader refused, in order. */
    public final List<String> refused = new CopyOnWriteArrayList<>();
    private final List<String> hiddenPrefixes;
    private final String dependency;

    private HidingClassLoader(List<String> hiddenPrefixes, String dependency, URL[] urls) {
        super("no-" + dependency, urls, ClassLoader.getPlatformClassLoader());
        this.hiddenPrefixes = List.copyOf(hiddenPrefixes);
        this.dependency = dependency;
    }

    /**
     * @param hiddenPrefix the package prefix to refuse, e.g. {@code "reactor."}
     * @param dependency   the optional dependency's name, for the refusal's message
     * @return a loader over the library and its compile dependencies only
     */
    public static HidingClassLoader without(String hiddenPrefix, String dependency) throws ClassNotFoundException {
        return without(hiddenPrefix, dependency, new Class<?>[0]);
    }

    /**
     * As {@link #without(String, String)}, the loader also seeing the jars or directories that hold
     * {@code alsoVisible} (another optional dependency the classes under test need, or a test class to run there).
     *
     * @param hiddenPrefix the package prefix to refuse
     * @param dependency   the optional dependency's name, for the refusal's message
     * @param alsoVisible  classes whose code sources are added to the loader's locations
     * @return a loader over the library, its compile dependencies and those locations
     */
    public static HidingClassLoader without(String hiddenPrefix, String dependency, Class<?>... alsoVisible)
            throws ClassNotFoundException {
        return without(List.of(hiddenPrefix), dependency, alsoVisible);
    }

    /**
     * As {@link #without(String, String, Class[])}, refusing every class under any of {@code hiddenPrefixes}.
     *
     * @param hiddenPrefixes the package prefixes to refuse, e.g. {@code "reactor."} and {@code "io.micrometer."}
     * @param dependency     the optional dependencies' names, for the refusal's message
     * @param alsoVisible    classes whose code sources are added to the loader's locations
     * @return a loader over the library, its compile dependencies and those locations
     */
    public static HidingClassLoader without(List<String> hiddenPrefixes, String dependency, Class<?>... alsoVisible)
            throws ClassNotFoundException {
        final URL[] urls = new URL[2 + alsoVisible.length];
        urls[0] = locationOf(Mailbox.class);   // reactor-mailbox/target/classes
        urls[1] = locationOf(Publisher.class); // reactive-streams
        for (int i = 0; i < alsoVisible.length; i++) {
            urls[2 + i] = locationOf(alsoVisible[i]);
        }
        return new HidingClassLoader(hiddenPrefixes, dependency, urls);
    }

    private static URL locationOf(Class<?> type) {
        return type.getProtectionDomain().getCodeSource().getLocation();
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        for (String hidden : hiddenPrefixes) {
            if (name.startsWith(hidden)) {
                refused.add(name);
                throw new ClassNotFoundException(name + " (hidden: " + dependency + " is optional)");
            }
        }
        return super.loadClass(name, resolve);
    }
}

package dev.mighty.mailbox;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.annotation.Annotation;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.lang.reflect.AnnotatedArrayType;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.AnnotatedParameterizedType;
import java.lang.reflect.AnnotatedType;
import java.lang.reflect.AnnotatedTypeVariable;
import java.lang.reflect.AnnotatedWildcardType;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.TypeVariable;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The public API of a published module as text: every package the module's descriptor exports to everyone, and in
 * it every type a user can name (public, or protected and nested in an extensible one) with its public and
 * protected members (protected only where a user can subclass), one signature a line, sorted. Nullness is part of
 * the signature: JSpecify annotations are written where they sit ({@code @Nullable T}, {@code T @Nullable []}), and
 * each package line says whether the package is {@code @NullMarked}. Compile-time constants show their value
 * (callers inline them).
 *
 * <p>Read by reflection from the module's compiled classes ({@code target/classes}, found through a class of the
 * module), so the test that compares it with the committed file ({@code api/<artifact>.api}) sees exactly what is
 * built. {@link #check} fails with a diff and the command that rewrites the file ({@code -Dapi.update=true}), so
 * the surface changes only on purpose. Shared with the Kafka module's tests through this module's test-jar.
 */
public final class ApiSurface {
    /** The system property that makes {@link #check} write the file instead of comparing. */
    public static final String UPDATE_PROPERTY = "api.update";

    private final String module;
    private final List<String> lines;
    private final int types;
    private final int constructors;
    private final int methods;
    private final int fields;

    private ApiSurface(String module, List<String> lines, int types, int constructors, int methods, int fields) {
        this.module = module;
        this.lines = List.copyOf(lines);
        this.types = types;
        this.constructors = constructors;
        this.methods = methods;
        this.fields = fields;
    }

    /**
     * @param anyClassOfTheModule a class in the module's {@code target/classes}, loaded by the test's class loader
     * @return the surface of the module those classes make up
     */
    public static ApiSurface of(Class<?> anyClassOfTheModule) {
        final Path classes = classesDirectory(anyClassOfTheModule);
        final ModuleDescriptor descriptor = descriptor(classes);
        final ClassLoader loader = anyClassOfTheModule.getClassLoader();
        final Set<String> exported = exportedPackages(descriptor);

        final List<String> out = new ArrayList<>();
        int types = 0;
        int constructors = 0;
        int methods = 0;
        int fields = 0;
        out.add("module " + descriptor.name());
        for (String pkg : exported) {
            out.add("");
            out.add("package " + pkg + packageAnnotations(pkg, loader));
            final TreeMap<String, Class<?>> byName = new TreeMap<>();
            for (String name : classNames(classes, pkg)) {
                final Class<?> type = load(name, loader);
                if (isApi(type)) {
                    byName.put(type.getName(), type);
                }
            }
            for (Class<?> type : byName.values()) {
                types++;
                out.add("");
                out.add(header(type));
                final boolean extensible = isExtensible(type);
                final TreeSet<String> members = new TreeSet<>();
                for (Field f : type.getDeclaredFields()) {
                    if (!f.isSynthetic() && visible(f.getModifiers(), extensible)) {
                        fields++;
                        members.add(field(f));
                    }
                }
                for (Constructor<?> c : type.getDeclaredConstructors()) {
                    if (!c.isSynthetic() && visible(c.getModifiers(), extensible)) {
                        constructors++;
                        members.add(executable(c, type));
                    }
                }
                for (Method m : type.getDeclaredMethods()) {
                    if (!m.isSynthetic() && !m.isBridge() && visible(m.getModifiers(), extensible)) {
                        methods++;
                        members.add(executable(m, type));
                    }
                }
                members.forEach(m -> out.add("  " + m));
            }
        }
        return new ApiSurface(descriptor.name(), out, types, constructors, methods, fields);
    }

    /** @return the text, as the committed file holds it */
    public String text() {
        return String.join("\n", lines) + "\n";
    }

    /** @return the types, constructors, methods and fields counted, for a report */
    public String counts() {
        return module + ": " + types + " types, " + constructors + " constructors, " + methods + " methods, "
                + fields + " fields";
    }

    /**
     * Compares this surface with the committed file, or writes the file when {@code -Dapi.update=true}.
     *
     * @param file          the committed dump
     * @param updateCommand the command that rewrites it, for the failure message
     */
    public void check(Path file, String updateCommand) {
        final String now = text();
        try {
            if (Boolean.getBoolean(UPDATE_PROPERTY)) {
                Files.createDirectories(file.getParent());
                Files.writeString(file, now, StandardCharsets.UTF_8);
                System.out.println("wrote " + file + " (" + counts() + ")");
                return;
            }
            if (!Files.exists(file)) {
                throw new AssertionError("no API dump at " + file + "; to write it: " + updateCommand);
            }
            final String committed = Files.readString(file, StandardCharsets.UTF_8);
            if (!committed.equals(now)) {
                throw new AssertionError("the public API of " + module + " is not what " + file
                        + " records (- recorded, + built):\n" + diff(committed.lines().toList(), lines)
                        + "\nIf the change is meant, update the file and commit it with the change: " + updateCommand);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // ------------------------------------------------------------------------------------------ what counts

    private static boolean isApi(Class<?> type) {
        if (type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
            return false;
        }
        final Class<?> enclosing = type.getDeclaringClass();
        if (enclosing == null) {
            return Modifier.isPublic(type.getModifiers());
        }
        return isApi(enclosing) && visible(type.getModifiers(), isExtensible(enclosing));
    }

    /** A user can declare a subclass (so protected members are theirs to use). */
    private static boolean isExtensible(Class<?> type) {
        if (type.isInterface() || Modifier.isFinal(type.getModifiers()) || type.isSealed() || type.isEnum()
                || type.isRecord()) {
            return false;
        }
        return Arrays.stream(type.getDeclaredConstructors())
                .anyMatch(c -> Modifier.isPublic(c.getModifiers()) || Modifier.isProtected(c.getModifiers()));
    }

    private static boolean visible(int modifiers, boolean extensible) {
        return Modifier.isPublic(modifiers) || (extensible && Modifier.isProtected(modifiers));
    }

    // ------------------------------------------------------------------------------------------ rendering

    private static String header(Class<?> type) {
        final StringBuilder sb = new StringBuilder(declarationAnnotations(type));
        int mods = type.getModifiers() & (Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC | Modifier.FINAL
                | Modifier.ABSTRACT);
        final String kind;
        if (type.isAnnotation()) {
            kind = "@interface";
            mods &= ~(Modifier.ABSTRACT | Modifier.STATIC);
        } else if (type.isInterface()) {
            kind = "interface";
            mods &= ~(Modifier.ABSTRACT | Modifier.STATIC);
        } else if (type.isEnum()) {
            kind = "enum";
            mods &= ~(Modifier.FINAL | Modifier.STATIC | Modifier.ABSTRACT);
        } else if (type.isRecord()) {
            kind = "record";
            mods &= ~(Modifier.FINAL | Modifier.STATIC);
        } else {
            kind = "class";
        }
        sb.append(Modifier.toString(mods));
        if (type.isSealed()) {
            sb.append(" sealed");
        }
        sb.append(' ').append(kind).append(' ').append(name(type)).append(typeParameters(type.getTypeParameters()));
        final AnnotatedType superclass = type.getAnnotatedSuperclass();
        if (superclass != null && !type.isEnum() && !type.isRecord() && superclass.getType() != Object.class) {
            sb.append(" extends ").append(type(superclass));
        }
        final AnnotatedType[] interfaces = type.getAnnotatedInterfaces();
        if (interfaces.length > 0) {
            sb.append(type.isInterface() ? " extends " : " implements ")
                    .append(Arrays.stream(interfaces).map(ApiSurface::type).collect(Collectors.joining(", ")));
        }
        if (type.isSealed()) {
            final String permitted = Arrays.stream(type.getPermittedSubclasses()).filter(ApiSurface::isApi)
                    .map(ApiSurface::name).sorted().collect(Collectors.joining(", "));
            if (!permitted.isEmpty()) {
                sb.append(" permits ").append(permitted);
            }
        }
        return sb.toString();
    }

    private static String field(Field f) {
        final StringBuilder sb = new StringBuilder(declarationAnnotations(f));
        if (f.isEnumConstant()) {
            return sb.append("enum constant ").append(f.getName()).toString();
        }
        final int mods = f.getModifiers() & (Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC
                | Modifier.FINAL | Modifier.VOLATILE | Modifier.TRANSIENT);
        sb.append(Modifier.toString(mods)).append(' ').append(type(f.getAnnotatedType())).append(' ')
                .append(f.getName());
        if (Modifier.isStatic(mods) && Modifier.isFinal(mods)
                && (f.getType().isPrimitive() || f.getType() == String.class)) {
            try {
                final Object value = f.get(null);
                sb.append(" = ").append(value instanceof String s ? '"' + s + '"' : String.valueOf(value));
            } catch (IllegalAccessException e) {
                throw new AssertionError(e);
            }
        }
        return sb.toString();
    }

    private static String executable(Executable e, Class<?> owner) {
        final StringBuilder sb = new StringBuilder(declarationAnnotations(e));
        int mods = e.getModifiers() & (Modifier.PUBLIC | Modifier.PROTECTED | Modifier.STATIC | Modifier.FINAL
                | Modifier.ABSTRACT);
        if (owner.isInterface()) {
            mods &= ~Modifier.ABSTRACT;
        }
        sb.append(Modifier.toString(mods));
        if (e instanceof Method m && m.isDefault()) {
            sb.append(" default");
        }
        final String typeParameters = typeParameters(e.getTypeParameters());
        if (!typeParameters.isEmpty()) {
            sb.append(' ').append(typeParameters);
        }
        if (e instanceof Method m) {
            sb.append(' ').append(type(m.getAnnotatedReturnType())).append(' ').append(m.getName());
        } else {
            sb.append(' ').append(owner.getSimpleName());
        }
        final AnnotatedType[] parameters = e.getAnnotatedParameterTypes();
        final List<String> rendered = new ArrayList<>();
        for (int i = 0; i < parameters.length; i++) {
            String p = type(parameters[i]);
            if (e.isVarArgs() && i == parameters.length - 1 && p.endsWith("[]")) {
                p = p.substring(0, p.length() - 2) + "...";
            }
            rendered.add(p);
        }
        sb.append('(').append(String.join(", ", rendered)).append(')');
        final AnnotatedType[] exceptions = e.getAnnotatedExceptionTypes();
        if (exceptions.length > 0) {
            sb.append(" throws ").append(Arrays.stream(exceptions).map(ApiSurface::type)
                    .collect(Collectors.joining(", ")));
        }
        return sb.toString().strip();
    }

    private static String typeParameters(TypeVariable<?>[] variables) {
        if (variables.length == 0) {
            return "";
        }
        return Arrays.stream(variables).map(v -> {
            final String bounds = Arrays.stream(v.getAnnotatedBounds())
                    .filter(b -> b.getType() != Object.class || !annotations(b).isEmpty())
                    .map(ApiSurface::type).collect(Collectors.joining(" & "));
            return annotations(v) + v.getName() + (bounds.isEmpty() ? "" : " extends " + bounds);
        }).collect(Collectors.joining(", ", "<", ">"));
    }

    /** An annotated type as source would write it, with only the JSpecify annotations. */
    static String type(AnnotatedType t) {
        final String annotations = annotations(t);
        if (t instanceof AnnotatedArrayType array) {
            return type(array.getAnnotatedGenericComponentType())
                    + (annotations.isEmpty() ? "" : " " + annotations.strip() + " ") + "[]";
        }
        if (t instanceof AnnotatedTypeVariable) {
            return annotations + ((TypeVariable<?>) t.getType()).getName();
        }
        if (t instanceof AnnotatedWildcardType wildcard) {
            final AnnotatedType[] lower = wildcard.getAnnotatedLowerBounds();
            if (lower.length > 0) {
                return annotations + "? super " + type(lower[0]);
            }
            final AnnotatedType[] upper = wildcard.getAnnotatedUpperBounds();
            if (upper.length == 0 || (upper[0].getType() == Object.class && annotations(upper[0]).isEmpty())) {
                return annotations + "?";
            }
            return annotations + "? extends " + type(upper[0]);
        }
        if (t instanceof AnnotatedParameterizedType parameterized) {
            final Class<?> raw = (Class<?>) ((ParameterizedType) t.getType()).getRawType();
            return annotations + name(raw) + Arrays.stream(parameterized.getAnnotatedActualTypeArguments())
                    .map(ApiSurface::type).collect(Collectors.joining(", ", "<", ">"));
        }
        return annotations + name((Class<?>) t.getType());
    }

    /** The name source would use: {@code java.util.Map.Entry}, {@code byte} ({@code byte[]} is an annotated array). */
    private static String name(Class<?> type) {
        final String canonical = type.getCanonicalName();
        return canonical != null ? canonical : type.getName();
    }

    /** The JSpecify annotations on a type use or element, as {@code "@Nullable "}; else empty. */
    private static String annotations(AnnotatedElement element) {
        return Arrays.stream(element.getDeclaredAnnotations())
                .map(Annotation::annotationType)
                .filter(a -> a.getPackageName().equals("org.jspecify.annotations"))
                .map(a -> "@" + a.getSimpleName() + " ")
                .sorted()
                .collect(Collectors.joining());
    }

    /** The declaration annotations a user of the API sees in their compiler: deprecation and the JSpecify ones. */
    private static String declarationAnnotations(AnnotatedElement element) {
        final StringBuilder sb = new StringBuilder();
        if (element.isAnnotationPresent(Deprecated.class)) {
            final Deprecated deprecated = element.getAnnotation(Deprecated.class);
            sb.append(deprecated.forRemoval() ? "@Deprecated(forRemoval=true) " : "@Deprecated ");
        }
        if (element instanceof Class<?> type && type.isAnnotationPresent(FunctionalInterface.class)) {
            sb.append("@FunctionalInterface ");
        }
        return sb.append(annotations(element)).toString();
    }

    private static String packageAnnotations(String pkg, ClassLoader loader) {
        try {
            final Class<?> info = Class.forName(pkg + ".package-info", false, loader);
            final String annotations = annotations(info).strip();
            return annotations.isEmpty() ? "" : " " + annotations;
        } catch (ClassNotFoundException e) {
            return "";
        }
    }

    // ------------------------------------------------------------------------------------------ plumbing

    /**
     * @param anyClassOfTheModule a class in the module's {@code target/classes}
     * @return the packages the module exports to everyone whose {@code package-info} is not annotated
     *         {@code @org.jspecify.annotations.NullMarked}, sorted (empty when all are)
     */
    public static List<String> exportedPackagesNotNullMarked(Class<?> anyClassOfTheModule) {
        final ClassLoader loader = anyClassOfTheModule.getClassLoader();
        return exportedPackages(descriptor(classesDirectory(anyClassOfTheModule))).stream()
                .filter(pkg -> !packageAnnotations(pkg, loader).contains("@NullMarked"))
                .toList();
    }

    private static ModuleDescriptor descriptor(Path classes) {
        final ModuleReference reference = ModuleFinder.of(classes).findAll().stream().findFirst()
                .orElseThrow(() -> new AssertionError("no module descriptor in " + classes));
        return reference.descriptor();
    }

    private static Set<String> exportedPackages(ModuleDescriptor descriptor) {
        return descriptor.exports().stream().filter(e -> !e.isQualified())
                .map(ModuleDescriptor.Exports::source).collect(Collectors.toCollection(TreeSet::new));
    }

    /** @return {@code target/classes} of the module holding the class */
    public static Path classesDirectory(Class<?> type) {
        try {
            final Path location = Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (!Files.isDirectory(location)) {
                throw new AssertionError(type + " was loaded from " + location + ", not from a classes directory");
            }
            return location;
        } catch (URISyntaxException e) {
            throw new AssertionError(e);
        }
    }

    /** @return the module's base directory ({@code target/classes}, two levels up) */
    public static Path moduleDirectory(Class<?> type) {
        return classesDirectory(type).getParent().getParent();
    }

    private static List<String> classNames(Path classes, String pkg) {
        final Path dir = classes.resolve(pkg.replace('.', '/'));
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".class") && !n.equals("package-info.class"))
                    .map(n -> pkg + "." + n.substring(0, n.length() - ".class".length()))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Class<?> load(String name, ClassLoader loader) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException e) {
            throw new AssertionError(e);
        }
    }

    /** A line diff (longest common subsequence), each changed line under the last type header before it. */
    static String diff(List<String> before, List<String> after) {
        final int n = before.size();
        final int m = after.size();
        final int[][] lcs = new int[n + 1][m + 1];
        for (int i = n - 1; i >= 0; i--) {
            for (int j = m - 1; j >= 0; j--) {
                lcs[i][j] = before.get(i).equals(after.get(j)) ? lcs[i + 1][j + 1] + 1
                        : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
            }
        }
        final StringBuilder sb = new StringBuilder();
        String header = null;
        String shownHeader = null;
        int i = 0;
        int j = 0;
        while (i < n || j < m) {
            final String line;
            final char sign;
            if (i < n && j < m && before.get(i).equals(after.get(j))) {
                line = before.get(i);
                sign = ' ';
                i++;
                j++;
            } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
                line = before.get(i++);
                sign = '-';
            } else {
                line = after.get(j++);
                sign = '+';
            }
            if (sign == ' ') {
                if (!line.isEmpty() && !line.startsWith(" ")) {
                    header = line;
                }
                continue;
            }
            if (header != null && !header.equals(shownHeader) && line.startsWith(" ")) {
                sb.append("  ").append(header).append('\n');
                shownHeader = header;
            }
            sb.append(sign).append(' ').append(line).append('\n');
            if (!line.isEmpty() && !line.startsWith(" ")) {
                header = line;
                shownHeader = line;
            }
        }
        return sb.toString();
    }
}

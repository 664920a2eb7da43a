package dev.mighty.mailbox.docs;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.lang.model.element.Modifier;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.DirectiveTree;
import com.sun.source.tree.ExportsTree;
import com.sun.source.tree.LiteralTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.ModifiersTree;
import com.sun.source.tree.Tree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.JavacTask;

/**
 * The types and members of the project's Java sources, read by parsing the sources (javac's parser, no
 * compilation and no class loading), so a class counts wherever it lives: any module, main, test or jcstress
 * sources. Docs cite library types, test classes (as evidence) and internals (in the design pages), so the
 * index keeps every type; what a doc may cite of a type depends on whether the type is API.
 *
 * <p>A type is <b>API</b> when it is public (with every enclosing type) in a package that a {@code module-info.java}
 * of the project exports to everyone. Of an API type a doc may cite public or protected members, interface members
 * (public unless private), enum constants and record components; of any other type (package-private, internal,
 * test, jcstress) any member, since the design pages describe those as they are.
 */
final class CodeIndex {

    /** One type declaration; {@code members} holds the names a doc may cite (see the class comment). */
    static final class TypeInfo {
        final String packageName;
        final String name;
        final String qualifiedName;
        final boolean api;
        final Set<String> members = new HashSet<>();
        final List<String> supertypes = new ArrayList<>();
        final Map<String, TypeInfo> nested = new HashMap<>();

        TypeInfo(String packageName, String name, String qualifiedName, boolean api) {
            this.packageName = packageName;
            this.name = name;
            this.qualifiedName = qualifiedName;
            this.api = api;
        }

        @Override
        public String toString() {
            return qualifiedName;
        }
    }

    private final Map<String, List<TypeInfo>> bySimpleName = new HashMap<>();
    private final Set<String> exported = new HashSet<>();
    private final Set<String> stringConstants = new HashSet<>();

    /** {@return the source roots of every module under {@code root}: {@code <module>/src/<set>/java}} */
    static List<Path> sourceRoots(Path root) throws IOException {
        try (Stream<Path> modules = Files.list(root)) {
            final List<Path> roots = new ArrayList<>();
            for (Path module : modules.filter(Files::isDirectory).sorted().collect(Collectors.toList())) {
                final Path src = module.resolve("src");
                if (!Files.isDirectory(src)) {
                    continue;
                }
                try (Stream<Path> sets = Files.list(src)) {
                    sets.map(set -> set.resolve("java")).filter(Files::isDirectory).sorted().forEach(roots::add);
                }
            }
            return roots;
        }
    }

    /** Parses every {@code .java} file under the given roots. */
    static CodeIndex scan(List<Path> roots) throws IOException {
        final Map<String, String> sources = new LinkedHashMap<>();
        for (Path root : roots) {
            final boolean main = root.getParent().getFileName().toString().equals("main");
            try (Stream<Path> files = Files.walk(root)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".java")).sorted()
                        .collect(Collectors.toList())) {
                    sources.put((main ? "main:" : "other:") + file, Files.readString(file, StandardCharsets.UTF_8));
                }
            }
        }
        return parse(sources);
    }

    /**
     * Parses sources given as text, keyed by a name that starts with {@code "main:"} for library sources (any
     * other key: test, jcstress or benchmark sources whose members are all citable).
     */
    static CodeIndex parse(Map<String, String> sources) {
        final JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        final List<JavaFileObject> files = new ArrayList<>();
        final Map<URI, Boolean> isMain = new HashMap<>();
        int i = 0;
        for (Map.Entry<String, String> e : sources.entrySet()) {
            final String text = e.getValue();
            final String key = e.getKey();
            final String name = key.substring(Math.max(key.lastIndexOf('/'), key.indexOf(':')) + 1);
            final JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///" + i++ + "/" + name),
                    JavaFileObject.Kind.SOURCE) {
                @Override
                public CharSequence getCharContent(boolean ignoreEncodingErrors) {
                    return text;
                }
            };
            files.add(file);
            isMain.put(file.toUri(), e.getKey().startsWith("main:"));
        }
        final JavacTask task = (JavacTask) javac.getTask(null, null, diagnostic -> { }, List.of("-proc:none"),
                null, files);
        final CodeIndex index = new CodeIndex();
        try {
            final List<CompilationUnitTree> units = new ArrayList<>();
            task.parse().forEach(units::add);
            for (CompilationUnitTree unit : units) {
                if (unit.getModule() != null) {
                    for (DirectiveTree directive : unit.getModule().getDirectives()) {
                        if (directive instanceof ExportsTree && ((ExportsTree) directive).getModuleNames() == null) {
                            index.exported.add(((ExportsTree) directive).getPackageName().toString());
                        }
                    }
                }
            }
            for (CompilationUnitTree unit : units) {
                final String pkg = unit.getPackageName() == null ? "" : unit.getPackageName().toString();
                final boolean main = isMain.get(unit.getSourceFile().toUri());
                final List<TypeInfo> topLevel = new ArrayList<>();
                for (Tree decl : unit.getTypeDecls()) {
                    if (decl instanceof ClassTree) {
                        topLevel.add(index.add(pkg, null, (ClassTree) decl, main, false));
                    }
                }
                index.addFileType(pkg, fileName(unit), topLevel);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return index;
    }

    private static String fileName(CompilationUnitTree unit) {
        final String path = unit.getSourceFile().getName();
        final String file = path.substring(path.lastIndexOf('/') + 1);
        return file.endsWith(".java") ? file.substring(0, file.length() - 5) : file;
    }

    /**
     * A file whose name is no type of it (a padded field chain of several classes) is cited by its name: it counts
     * as a type holding its top-level types and their members.
     */
    private void addFileType(String pkg, String name, List<TypeInfo> topLevel) {
        if (topLevel.isEmpty() || topLevel.stream().anyMatch(t -> t.name.equals(name))) {
            return;
        }
        final TypeInfo file = new TypeInfo(pkg, name, pkg + "." + name + " (file)", false);
        for (TypeInfo t : topLevel) {
            file.nested.put(t.name, t);
            file.members.addAll(t.members);
        }
        bySimpleName.computeIfAbsent(name, k -> new ArrayList<>()).add(file);
    }

    private TypeInfo add(String pkg, TypeInfo outer, ClassTree tree, boolean main, boolean inInterface) {
        final String name = tree.getSimpleName().toString();
        final Set<Modifier> flags = tree.getModifiers().getFlags();
        final boolean visible = flags.contains(Modifier.PUBLIC) || flags.contains(Modifier.PROTECTED)
                || (inInterface && !flags.contains(Modifier.PRIVATE));
        final boolean api = main && visible && exported.contains(pkg) && (outer == null || outer.api);
        final String qualified = outer == null ? (pkg.isEmpty() ? name : pkg + "." + name)
                : outer.qualifiedName + "." + name;
        final TypeInfo type = new TypeInfo(pkg, name, qualified, api);
        if (outer != null) {
            outer.nested.put(name, type);
        }
        bySimpleName.computeIfAbsent(name, k -> new ArrayList<>()).add(type);
        if (tree.getExtendsClause() != null) {
            type.supertypes.add(simpleName(tree.getExtendsClause()));
        }
        for (Tree t : tree.getImplementsClause()) {
            type.supertypes.add(simpleName(t));
        }
        final Tree.Kind kind = tree.getKind();
        final boolean isInterface = kind == Tree.Kind.INTERFACE || kind == Tree.Kind.ANNOTATION_TYPE;
        type.members.add(name); // the constructor, as in Type#Type(...)
        for (Tree member : tree.getMembers()) {
            if (member instanceof ClassTree) {
                add(pkg, type, (ClassTree) member, main, isInterface);
            } else if (member instanceof MethodTree) {
                final MethodTree method = (MethodTree) member;
                if (citable(type, method.getModifiers(), isInterface)) {
                    type.members.add(method.getName().toString());
                }
            } else if (member instanceof VariableTree) {
                final VariableTree field = (VariableTree) member;
                if (field.getInitializer() instanceof LiteralTree
                        && ((LiteralTree) field.getInitializer()).getValue() instanceof String) {
                    stringConstants.add((String) ((LiteralTree) field.getInitializer()).getValue());
                }
                final boolean component = kind == Tree.Kind.RECORD
                        && !field.getModifiers().getFlags().contains(Modifier.STATIC);
                if (component || citable(type, field.getModifiers(), isInterface)
                        || kind == Tree.Kind.ENUM && isEnumConstantOf(field, name)) {
                    type.members.add(field.getName().toString());
                }
            }
        }
        return type;
    }

    /** javac's parser gives enum constants the enum's own type. */
    private static boolean isEnumConstantOf(VariableTree field, String enumName) {
        return field.getType() != null && field.getType().toString().equals(enumName)
                && field.getInitializer() != null && field.getInitializer().getKind() == Tree.Kind.NEW_CLASS;
    }

    private static boolean citable(TypeInfo type, ModifiersTree modifiers, boolean isInterface) {
        if (!type.api) {
            return true;
        }
        final Set<Modifier> flags = modifiers.getFlags();
        return flags.contains(Modifier.PUBLIC) || flags.contains(Modifier.PROTECTED)
                || (isInterface && !flags.contains(Modifier.PRIVATE));
    }

    private static String simpleName(Tree type) {
        String s = type.toString();
        final int generic = s.indexOf('<');
        if (generic >= 0) {
            s = s.substring(0, generic);
        }
        return s.substring(s.lastIndexOf('.') + 1).trim();
    }

    /** {@return every type with this simple name (top-level or nested), in any package} */
    List<TypeInfo> types(String simpleName) {
        return bySimpleName.getOrDefault(simpleName, List.of());
    }

    /**
     * {@return whether a field of the sources is initialized with this string literal (a JFR event name such as
     * {@code dev.mighty.mailbox.ProducerParked}), or with a qualified name whose last part it is}
     */
    boolean isStringConstant(String value) {
        return stringConstants.contains(value)
                || stringConstants.stream().anyMatch(c -> c.startsWith("dev.mighty.") && c.endsWith("." + value));
    }

    /** {@return whether a citable member of {@code type} or of a project supertype is named as {@code member} says} */
    boolean hasMember(TypeInfo type, Predicate<String> member) {
        return hasMember(type, member, new HashSet<>());
    }

    private boolean hasMember(TypeInfo type, Predicate<String> member, Set<TypeInfo> seen) {
        if (!seen.add(type)) {
            return false;
        }
        if (type.members.stream().anyMatch(member) || type.nested.keySet().stream().anyMatch(member)) {
            return true;
        }
        for (String supertype : type.supertypes) {
            for (TypeInfo candidate : types(supertype)) {
                if (hasMember(candidate, member, seen)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** {@return the nested type {@code name} of {@code type} or of one of its project supertypes, or null} */
    TypeInfo nested(TypeInfo type, String name) {
        final TypeInfo direct = type.nested.get(name);
        if (direct != null) {
            return direct;
        }
        for (String supertype : type.supertypes) {
            for (TypeInfo candidate : types(supertype)) {
                if (candidate != type) {
                    final TypeInfo inherited = candidate.nested.get(name);
                    if (inherited != null) {
                        return inherited;
                    }
                }
            }
        }
        return null;
    }
}

package dev.mighty.mailbox.docs;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks what Markdown pages claim about the repository against the repository itself:
 * <ul>
 *   <li>code references in backticks name types and members that exist ({@link #checkReferences});</li>
 *   <li>relative links lead to files that exist, and their anchors (or the section named in quotes right after
 *       the link, as in {@code [docs/usage.md](docs/usage.md), "Good to know"}) to headings that exist
 *       ({@link #checkLinks});</li>
 *   <li>a block marked as generated is what its generator makes of the results file it names
 *       ({@link #checkGeneratedBlocks}).</li>
 * </ul>
 *
 * <p><b>What counts as a code reference.</b> An inline code span whose text starts with an optional lower-case
 * package prefix ({@code dev.mighty.mailbox.}) and an UpperCamel name (an upper-case letter, then letters and
 * digits with at least one lower-case letter: {@code FrameView}, not {@code FAIL_OVERFLOW}, {@code T} or
 * {@code OK}), followed by nothing or by one of {@code . # < ( [ ::}. So {@code mvn -B install}, paths, options,
 * lower-case words and phrases ({@code Tests run: 0}) are not references. The head name must be a project type
 * or on the allow-list (JDK and third-party names, words); for a project type, the rest is read as
 * {@code .Nested} types, then one member after {@code .} or {@code #}, which must exist (inherited from a project
 * supertype counts). What follows the first member (a call chain, arguments, generics) is not checked. A name
 * ending in {@code .java} is a file name: only the type is checked.
 */
final class DocsClaims {

    /** A claim that does not hold: where, the claim as written, and why. */
    record Finding(String file, int line, String claim, String problem) {
        @Override
        public String toString() {
            return file + ":" + line + ": `" + claim + "`: " + problem;
        }
    }

    /** Names a doc may use that are not project types, each with the reason it is allowed. */
    static final class AllowList {
        final Map<String, String> categoryByName = new LinkedHashMap<>();

        /**
         * Reads the format of {@code allowed-names.txt}: a line {@code ## category: what it holds} starts a
         * category; a line starting with {@code #} is a comment; other lines hold names separated by blanks.
         */
        static AllowList parse(String text) {
            final AllowList list = new AllowList();
            String category = null;
            for (String raw : text.split("\\R")) {
                final String line = raw.strip();
                if (line.startsWith("## ")) {
                    category = line.substring(3).split(":", 2)[0].strip();
                    continue;
                }
                if (line.startsWith("#")) {
                    continue;
                }
                for (String name : line.split("\\s+")) {
                    if (!name.isEmpty()) {
                        if (category == null) {
                            throw new IllegalArgumentException("allow-list: " + name + " has no category");
                        }
                        final String previous = list.categoryByName.put(name, category);
                        if (previous != null) {
                            throw new IllegalArgumentException("allow-list: " + name + " listed twice");
                        }
                    }
                }
            }
            return list;
        }

        static AllowList load() {
            try (InputStream in = DocsClaims.class.getResourceAsStream("allowed-names.txt")) {
                Objects.requireNonNull(in, "allowed-names.txt");
                return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /**
         * {@return the entry that covers a reference, or null: the entry is the whole reference or its start,
         * followed by something other than a letter or digit ({@code Flux} covers {@code Flux.create}; an entry
         * {@code Sink.foreach} covers only that member of a name that is also a project type)}
         */
        String entryFor(String token) {
            for (String name : categoryByName.keySet()) {
                if (token.startsWith(name) && (token.length() == name.length()
                        || !Character.isLetterOrDigit(token.charAt(name.length())))) {
                    return name;
                }
            }
            return null;
        }
    }

    private static final Pattern HEAD = Pattern.compile(
            "((?:[a-z][a-z0-9_]*\\.)*)([A-Z][A-Za-z0-9]*)(.*)", Pattern.DOTALL);
    private static final Pattern UPPER_CAMEL = Pattern.compile("[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*");
    private static final Pattern MEMBER = Pattern.compile("[.#]([A-Za-z_$][A-Za-z0-9_$]*)(.*)", Pattern.DOTALL);
    private static final Pattern FENCE = Pattern.compile("^\\s*(```|~~~)");
    private static final Pattern LINK = Pattern.compile("!?\\[([^\\]]*)\\]\\(([^)\\s]+)(?:\\s+\"[^\"]*\")?\\)");
    private static final Pattern QUOTED_SECTION = Pattern.compile("\\G\\)?\\s*[,(]?\\s*\"([^\"]+)\"");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    static final Pattern GENERATED_START = Pattern.compile(
            "<!-- generated from (\\S+) by ([A-Za-z_$][\\w$.]*); do not edit -->");
    static final String GENERATED_END = "<!-- end generated -->";

    private final CodeIndex index;
    private final AllowList allowList;

    DocsClaims(CodeIndex index, AllowList allowList) {
        this.index = index;
        this.allowList = allowList;
    }

    // ---------------------------------------------------------------------------------------------- references

    /** One inline code span: its text (line breaks as blanks) and the line it starts on. */
    record Span(String text, int line) { }

    /** {@return the inline code spans of a Markdown text, outside fenced blocks} */
    static List<Span> codeSpans(String markdown) {
        final String text = blankFences(markdown);
        final List<Span> spans = new ArrayList<>();
        int i = 0;
        while (i < text.length()) {
            if (text.charAt(i) != '`') {
                i++;
                continue;
            }
            int n = 0;
            while (i + n < text.length() && text.charAt(i + n) == '`') {
                n++;
            }
            final int start = i + n;
            final int end = closingRun(text, start, n);
            if (end < 0) {
                i = start;
                continue;
            }
            final String content = text.substring(start, end).replaceAll("\\R", " ");
            spans.add(new Span(n > 1 ? content.strip() : content, lineOf(text, start)));
            i = end + n;
        }
        return spans;
    }

    /** The start of the next run of exactly {@code n} backticks, not past a blank line; -1 if none. */
    private static int closingRun(String text, int from, int n) {
        int j = from;
        while (j < text.length()) {
            final char c = text.charAt(j);
            if (c == '\n' && blankLineFollows(text, j)) {
                return -1;
            }
            if (c == '`') {
                int m = 0;
                while (j + m < text.length() && text.charAt(j + m) == '`') {
                    m++;
                }
                if (m == n) {
                    return j;
                }
                j += m;
            } else {
                j++;
            }
        }
        return -1;
    }

    private static boolean blankLineFollows(String text, int newline) {
        int k = newline + 1;
        while (k < text.length() && (text.charAt(k) == ' ' || text.charAt(k) == '\t')) {
            k++;
        }
        return k >= text.length() || text.charAt(k) == '\n';
    }

    /** Checks every backticked code reference of one page; {@code file} names it in the findings. */
    List<Finding> checkReferences(String file, String markdown) {
        final List<Finding> findings = new ArrayList<>();
        for (Span span : codeSpans(markdown)) {
            final String problem = problemOf(span.text().strip());
            if (problem != null) {
                findings.add(new Finding(file, span.line(), span.text(), problem));
            }
        }
        return findings;
    }

    /** {@return whether a backticked text is read as a code reference (see the class comment)} */
    static boolean isReference(String token) {
        final Matcher head = HEAD.matcher(token);
        if (!head.matches() || !UPPER_CAMEL.matcher(head.group(2)).matches()) {
            return false;
        }
        final String rest = head.group(3);
        return rest.isEmpty() || rest.startsWith("::") || ".#<([".indexOf(rest.charAt(0)) >= 0;
    }

    /** {@return why a backticked text is a reference that does not hold, or null if it holds or is none} */
    String problemOf(String token) {
        if (!isReference(token)) {
            return null;
        }
        final Matcher head = HEAD.matcher(token);
        head.matches();
        final String prefix = head.group(1);
        if (allowList.entryFor(token) != null
                || !prefix.startsWith("dev.mighty.") && allowList.entryFor(token.substring(prefix.length())) != null) {
            return null; // a third-party name, also when qualified by its package (java.util.concurrent.Flow)
        }
        final String name = head.group(2);
        String rest = head.group(3);
        List<CodeIndex.TypeInfo> types = index.types(name);
        if (!prefix.isEmpty() && prefix.startsWith("dev.mighty.")) {
            final String pkg = prefix.substring(0, prefix.length() - 1);
            types = types.stream().filter(t -> t.packageName.equals(pkg)).toList();
            if (types.isEmpty()) {
                return index.isStringConstant(token) ? null : "no type " + name + " in package " + pkg
                        + " (nor a string constant of that value, such as a JFR event name)";
            }
        }
        if (types.isEmpty()) {
            return index.isStringConstant(name) && rest.isEmpty() ? null : "no type " + name + " in the project's sources, and not on the allow-list (allowed-names.txt)";
        }
        if (rest.endsWith(".java") && rest.indexOf('.', 1) < 0) {
            return null; // a file name
        }
        rest = skipGenerics(rest);
        while (true) {
            final Matcher member = MEMBER.matcher(rest);
            if (!member.matches()) {
                return null; // nothing more to check: end, arguments, ::new
            }
            final String m = member.group(1);
            final boolean glob = member.group(2).startsWith("*");
            final Predicate<String> named = glob ? s -> s.startsWith(m) : m::equals;
            final List<CodeIndex.TypeInfo> nested = new ArrayList<>();
            for (CodeIndex.TypeInfo type : types) {
                final CodeIndex.TypeInfo n = glob ? null : index.nested(type, m);
                if (n != null) {
                    nested.add(n);
                }
            }
            if (!nested.isEmpty() && rest.charAt(0) == '.') {
                types = nested;
                rest = skipGenerics(member.group(2));
                continue;
            }
            for (CodeIndex.TypeInfo type : types) {
                if (index.hasMember(type, named)) {
                    return null;
                }
            }
            final boolean api = types.stream().anyMatch(t -> t.api);
            return "no " + (api ? "public " : "") + "member " + m + (glob ? "*" : "") + " in " + types;
        }
    }

    private static String skipGenerics(String rest) {
        if (!rest.startsWith("<")) {
            return rest;
        }
        int depth = 0;
        for (int i = 0; i < rest.length(); i++) {
            final char c = rest.charAt(i);
            if (c == '<') {
                depth++;
            } else if (c == '>' && --depth == 0) {
                return rest.substring(i + 1);
            }
        }
        return "";
    }

    // --------------------------------------------------------------------------------------------------- links

    /**
     * Checks the relative links of one page: the target file exists; an anchor, or a section named in quotes
     * right after the link, is a heading of the target page.
     *
     * @param page the page's path (its directory resolves the links)
     * @param markdown the page's text
     * @param shown how the page is named in findings
     */
    static List<Finding> checkLinks(Path page, String markdown, String shown) {
        final List<Finding> findings = new ArrayList<>();
        final String text = blankCodeSpans(blankFences(markdown));
        final Matcher link = LINK.matcher(text);
        while (link.find()) {
            final String target = link.group(2);
            if (target.matches("(?i)^[a-z][a-z0-9+.-]*:.*")) {
                continue; // https:, mailto:
            }
            final int hash = target.indexOf('#');
            final String path = hash >= 0 ? target.substring(0, hash) : target;
            final String anchor = hash >= 0 ? target.substring(hash + 1) : null;
            final Path resolved = path.isEmpty() ? page : page.getParent().resolve(path).normalize();
            final int line = lineOf(text, link.start());
            if (!Files.exists(resolved)) {
                findings.add(new Finding(shown, line, link.group(), "no file " + resolved));
                continue;
            }
            if (!resolved.toString().endsWith(".md")) {
                continue;
            }
            final String targetText = resolved.equals(page) ? markdown : read(resolved);
            if (anchor != null && !anchors(targetText).contains(anchor)) {
                findings.add(new Finding(shown, line, link.group(), "no heading with anchor #" + anchor + " in "
                        + resolved.getFileName()));
            }
            final Matcher quoted = QUOTED_SECTION.matcher(text);
            quoted.region(link.end(), Math.min(text.length(), link.end() + 200));
            if (anchor == null && quoted.lookingAt()) {
                final String section = quoted.group(1);
                if (!hasHeadingStartingWith(targetText, section)) {
                    findings.add(new Finding(shown, line, link.group() + ", \"" + section + "\"",
                            "no heading \"" + section + "\" in " + resolved.getFileName()));
                }
            }
        }
        return findings;
    }

    /** {@return the anchors GitHub makes of a page's headings} */
    static Set<String> anchors(String markdown) {
        final Map<String, Integer> seen = new HashMap<>();
        final Set<String> anchors = new java.util.HashSet<>();
        for (String heading : headings(markdown)) {
            final String slug = slug(heading);
            final int count = seen.merge(slug, 1, Integer::sum);
            anchors.add(count == 1 ? slug : slug + "-" + (count - 1));
        }
        return anchors;
    }

    /** GitHub's rule: lower case; drop what is not a letter, digit, blank, '-' or '_'; blanks to '-'. */
    static String slug(String heading) {
        final String plain = heading.replaceAll("\\[([^\\]]*)\\]\\([^)]*\\)", "$1");
        return plain.toLowerCase(Locale.ROOT).replaceAll("[^\\p{L}\\p{N} _-]", "").replace(' ', '-');
    }

    private static boolean hasHeadingStartingWith(String markdown, String section) {
        final String wanted = plain(section);
        return headings(markdown).stream().map(DocsClaims::plain).anyMatch(h -> h.startsWith(wanted));
    }

    private static String plain(String s) {
        return s.replaceAll("[`*_]", "").strip().toLowerCase(Locale.ROOT);
    }

    private static List<String> headings(String markdown) {
        final List<String> headings = new ArrayList<>();
        for (String line : blankFences(markdown).split("\n", -1)) {
            final Matcher h = HEADING.matcher(line);
            if (h.matches()) {
                headings.add(h.group(1));
            }
        }
        return headings;
    }

    // --------------------------------------------------------------------------------------- generated blocks

    /**
     * Checks each block between {@code <!-- generated from <results> by <Generator>; do not edit -->} and
     * {@code <!-- end generated -->}: the results path is relative to the repository root; the generator is
     * looked up by {@code generators} (by default: a class on the class path, by binary name, with
     * {@code public static String render(String resultsJson)}). The block's lines must equal the generator's
     * output, ignoring blank lines at either end.
     */
    static List<Finding> checkGeneratedBlocks(Path root, String markdown, String shown,
                                              Function<String, Function<String, String>> generators) {
        final List<Finding> findings = new ArrayList<>();
        final Matcher start = GENERATED_START.matcher(markdown);
        final String[] unfenced = blankFences(markdown).split("\n", -1);
        int from = 0;
        while (start.find(from)) {
            final int line = lineOf(markdown, start.start());
            if (unfenced[line - 1].isEmpty()) {
                from = start.end(); // a marker shown in a fenced block (as CONTRIBUTING.md does) is not one
                continue;
            }
            final int end = markdown.indexOf(GENERATED_END, start.end());
            final int nextStart = indexOfNextStart(markdown, start.end());
            if (end < 0 || (nextStart >= 0 && nextStart < end)) {
                findings.add(new Finding(shown, line, start.group(), "no " + GENERATED_END + " after it"));
                return findings;
            }
            from = end + GENERATED_END.length();
            final Path results = root.resolve(start.group(1)).normalize();
            if (!Files.isRegularFile(results)) {
                findings.add(new Finding(shown, line, start.group(), "no results file " + results));
                continue;
            }
            final Function<String, String> generator;
            try {
                generator = generators.apply(start.group(2));
            } catch (RuntimeException e) {
                findings.add(new Finding(shown, line, start.group(), "no generator: " + e));
                continue;
            }
            final List<String> expected = trimmedLines(generator.apply(read(results)));
            final List<String> actual = trimmedLines(markdown.substring(start.end(), end));
            if (!expected.equals(actual)) {
                findings.add(new Finding(shown, line, start.group(), firstDifference(expected, actual)));
            }
        }
        return findings;
    }

    private static int indexOfNextStart(String markdown, int from) {
        final Matcher m = GENERATED_START.matcher(markdown);
        return m.find(from) ? m.start() : -1;
    }

    /** The default lookup: {@code public static String render(String)} of a class on the class path. */
    static Function<String, String> generatorClass(String binaryName) {
        try {
            final Method render = Class.forName(binaryName).getMethod("render", String.class);
            if (!Modifier.isStatic(render.getModifiers()) || render.getReturnType() != String.class) {
                throw new IllegalArgumentException(binaryName + ".render(String) is not a static String method");
            }
            return json -> {
                try {
                    return (String) render.invoke(null, json);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(binaryName + ".render failed", e);
                }
            };
        } catch (ClassNotFoundException | NoSuchMethodException e) {
            throw new IllegalArgumentException(binaryName + " with a static render(String), on the test class path"
                    + " of the module that runs DocsClaimsTest", e);
        }
    }

    private static List<String> trimmedLines(String text) {
        final List<String> lines = new ArrayList<>(List.of(text.split("\\R", -1)));
        lines.replaceAll(String::stripTrailing);
        while (!lines.isEmpty() && lines.get(0).isEmpty()) {
            lines.remove(0);
        }
        while (!lines.isEmpty() && lines.get(lines.size() - 1).isEmpty()) {
            lines.remove(lines.size() - 1);
        }
        return lines;
    }

    private static String firstDifference(List<String> expected, List<String> actual) {
        for (int i = 0; i < Math.max(expected.size(), actual.size()); i++) {
            final String e = i < expected.size() ? expected.get(i) : "(nothing)";
            final String a = i < actual.size() ? actual.get(i) : "(nothing)";
            if (!e.equals(a)) {
                return "the block differs from its generator's output at its line " + (i + 1) + ": expected <" + e
                        + "> but the page has <" + a + ">";
            }
        }
        return "the block differs from its generator's output";
    }

    // ------------------------------------------------------------------------------------------------- helpers

    /** Blanks fenced code blocks (keeping line breaks, so line numbers hold). */
    static String blankFences(String markdown) {
        final String[] lines = markdown.split("\n", -1);
        final StringBuilder out = new StringBuilder(markdown.length());
        String fence = null;
        for (int i = 0; i < lines.length; i++) {
            final Matcher f = FENCE.matcher(lines[i]);
            final boolean isFence = f.find() && (fence == null || f.group(1).equals(fence));
            if (isFence) {
                fence = fence == null ? f.group(1) : null;
            }
            if (i > 0) {
                out.append('\n');
            }
            out.append(isFence || fence != null ? "" : lines[i]);
        }
        return out.toString();
    }

    private static String blankCodeSpans(String text) {
        final StringBuilder out = new StringBuilder(text);
        int i = 0;
        while (i < text.length()) {
            if (text.charAt(i) != '`') {
                i++;
                continue;
            }
            int n = 0;
            while (i + n < text.length() && text.charAt(i + n) == '`') {
                n++;
            }
            final int end = closingRun(text, i + n, n);
            if (end < 0) {
                i += n;
                continue;
            }
            for (int k = i; k < end + n; k++) {
                if (out.charAt(k) != '\n') {
                    out.setCharAt(k, ' ');
                }
            }
            i = end + n;
        }
        return out.toString();
    }

    private static int lineOf(String text, int offset) {
        int line = 1;
        for (int i = 0; i < offset; i++) {
            if (text.charAt(i) == '\n') {
                line++;
            }
        }
        return line;
    }

    static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

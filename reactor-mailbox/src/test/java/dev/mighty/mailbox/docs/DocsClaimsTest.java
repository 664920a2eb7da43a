package dev.mighty.mailbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The docs say what the code is: every backticked code reference names a type or member that exists, every
 * relative link leads to a file (and heading) that exists, and every block marked as generated is what its
 * generator makes of its results file (see {@link DocsClaims} for what counts as a reference, and
 * {@code allowed-names.txt} for the third-party names the docs may use).
 *
 * <p>Pages checked: {@code README.md}, {@code CONTRIBUTING.md}, {@code bench/README.md} and {@code docs/*.md},
 * except that {@code CHANGELOG.md} and {@code docs/benchmarks-log.md} are history (they name what the code was
 * then): only their links are checked. Code is read from the sources of every module (main, test and jcstress),
 * parsed, not loaded, so a class counts whichever module holds it. Fenced code blocks are not checked here (the
 * README's example is compiled by {@code ReadmeExampleTest}).
 *
 * <p>The tests on synthetic input show that the checker fails on what it should.
 */
class DocsClaimsTest {
    private static Path root;
    private static CodeIndex index;

    @BeforeAll
    static void scan() throws IOException {
        root = repositoryRoot(Path.of("").toAbsolutePath());
        index = CodeIndex.scan(CodeIndex.sourceRoots(root));
    }

    /** The directory holding {@code .ci/}, or the root pom (the one with {@code <modules>}), from here up. */
    static Path repositoryRoot(Path start) throws IOException {
        for (Path dir = start; dir != null; dir = dir.getParent()) {
            if (Files.isDirectory(dir.resolve(".ci"))) {
                return dir;
            }
            final Path pom = dir.resolve("pom.xml");
            if (Files.isRegularFile(pom) && Files.readString(pom, StandardCharsets.UTF_8).contains("<modules>")) {
                return dir;
            }
        }
        throw new IllegalStateException("no repository root above " + start);
    }

    /** Pages that describe the code as it is now. */
    private static List<Path> currentPages() throws IOException {
        final List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md"), root.resolve("CONTRIBUTING.md"),
                root.resolve("bench/README.md")));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).filter(p -> !p.endsWith("benchmarks-log.md")).sorted()
                    .forEach(pages::add);
        }
        return pages;
    }

    /** Pages of history: their links must lead somewhere, their names need not exist any more. */
    private static List<Path> historyPages() {
        return List.of(root.resolve("CHANGELOG.md"), root.resolve("docs/benchmarks-log.md"));
    }

    private static String shown(Path page) {
        return root.relativize(page).toString();
    }

    // ------------------------------------------------------------------------------------------ the real docs

    @Test
    void shouldNameOnlyExistingCodeWhenTheDocsCiteItInBackticks() throws IOException {
        final DocsClaims claims = new DocsClaims(index, DocsClaims.AllowList.load());
        final List<DocsClaims.Finding> findings = new ArrayList<>();
        for (Path page : currentPages()) {
            findings.addAll(claims.checkReferences(shown(page), DocsClaims.read(page)));
        }
        assertThat(findings).as("backticked names that the code does not have (fix the doc, or, for a"
                + " third-party name, add it to allowed-names.txt)").isEmpty();
    }

    @Test
    void shouldLinkOnlyToFilesAndHeadingsThatExist() throws IOException {
        final List<DocsClaims.Finding> findings = new ArrayList<>();
        for (Path page : Stream.concat(currentPages().stream(), historyPages().stream()).collect(Collectors.toList())) {
            findings.addAll(DocsClaims.checkLinks(page, DocsClaims.read(page), shown(page)));
        }
        assertThat(findings).as("dead relative links, anchors and quoted sections").isEmpty();
    }

    @Test
    void shouldMatchEveryGeneratedBlockToItsResultsFile() throws IOException {
        final List<DocsClaims.Finding> findings = new ArrayList<>();
        for (Path page : currentPages()) {
            findings.addAll(DocsClaims.checkGeneratedBlocks(root, DocsClaims.read(page), shown(page),
                    DocsClaims::generatorClass));
        }
        assertThat(findings).as("generated blocks edited by hand, or stale against their results").isEmpty();
    }

    @Test
    void shouldKeepProjectTypesOffTheAllowList() {
        final List<String> shadowing = DocsClaims.AllowList.load().categoryByName.keySet().stream()
                .filter(name -> !index.types(name).isEmpty()).collect(Collectors.toList());
        assertThat(shadowing).as("allow-list entries that are project types (they would hide renamed members)")
                .isEmpty();
    }

    // ------------------------------------------------------------------------------------- the checker itself

    private static final CodeIndex SYNTHETIC = CodeIndex.parse(Map.of(
            "main:module-info.java", "module demo { exports demo.api; }",
            "main:demo/api/Box.java", "package demo.api;\n"
                    + "public interface Box<T> { boolean trySend(T m); int MAX = 4;"
                    + " final class Impl { public void open() { } private void secret() { } } }",
            "main:demo/api/Boxes.java", "package demo.api;\n"
                    + "public final class Boxes { public static <T> Box<T> bounded(int c) { return null; }"
                    + " static void hidden() { } private int size; }",
            "main:demo/api/Policy.java", "package demo.api;\npublic enum Policy { PARK, SPIN; }",
            "main:demo/internal/Ring.java", "package demo.internal;\n"
                    + "class Ring { private long producerIndex; void enterConsumer() { } }",
            "other:demo/api/BoxTest.java", "package demo.api;\n"
                    + "class BoxTest { @org.junit.jupiter.api.Test void shouldSend() { } }"));

    private static DocsClaims synthetic(String allowList) {
        return new DocsClaims(SYNTHETIC, DocsClaims.AllowList.parse(allowList));
    }

    @Test
    void shouldFlagAMemberWhenTheTypeHasNone() {
        final List<DocsClaims.Finding> findings = synthetic("").checkReferences("page.md",
                "Use `Box.trySend(msg)`, not `Box.noSuchMethod`; `Boxes.bounded(16)` builds one.\n");
        assertThat(findings).extracting(DocsClaims.Finding::claim).containsExactly("Box.noSuchMethod");
        assertThat(findings.get(0).line()).isEqualTo(1);
        assertThat(findings.get(0).problem()).contains("no public member noSuchMethod");
    }

    @Test
    void shouldFlagATypeNameWhenNoSourceDeclaresItAndTheAllowListLacksIt() {
        final DocsClaims claims = synthetic("## jdk: the JDK\nArrayBlockingQueue\n");
        assertThat(claims.problemOf("Mailbox")).contains("no type Mailbox");
        assertThat(claims.problemOf("RenamedBox.trySend")).contains("no type RenamedBox");
        assertThat(claims.problemOf("ArrayBlockingQueue.put")).isNull();
        assertThat(claims.problemOf("java.util.concurrent.ArrayBlockingQueue")).isNull();
        assertThat(claims.problemOf("demo.api.Box")).isNull();
    }

    @Test
    void shouldRequireAPublicMemberWhenTheTypeIsApi() {
        final DocsClaims claims = synthetic("");
        assertThat(claims.problemOf("Boxes.hidden()")).contains("no public member hidden");
        assertThat(claims.problemOf("Boxes#size")).contains("no public member size");
        assertThat(claims.problemOf("Box.MAX")).isNull(); // interface members are public
        assertThat(claims.problemOf("Box.Impl.open()")).isNull();
        assertThat(claims.problemOf("Box.Impl.secret()")).contains("no public member secret");
        assertThat(claims.problemOf("Policy.PARK")).isNull();
        assertThat(claims.problemOf("Policy.YIELD")).contains("no public member YIELD");
        // internal and test types may be cited with any member
        assertThat(claims.problemOf("Ring.producerIndex")).isNull();
        assertThat(claims.problemOf("Ring.enterConsumer()")).isNull();
        assertThat(claims.problemOf("BoxTest#shouldSend")).isNull();
        assertThat(claims.problemOf("BoxTest#shouldNotSend")).contains("no member shouldNotSend");
    }

    @Test
    void shouldNotReadCommandsPathsAndWordsAsReferences() {
        final DocsClaims claims = synthetic("");
        for (String notAReference : List.of("mvn -B install", "docs/usage.md", "-Dtest=X", "publishOn",
                "FAIL_OVERFLOW", "T", "OK", "Tests run: 0", "R → Queued(R, N)", "dev.mighty.mailbox.internal",
                "PUBLISH_ON: CLOSE vs SUBSCRIBE", "GOMAXPROCS=2")) {
            assertThat(DocsClaims.isReference(notAReference)).as(notAReference).isFalse();
            assertThat(claims.problemOf(notAReference)).as(notAReference).isNull();
        }
        for (String reference : List.of("Box", "Box.trySend", "Box#trySend", "Box.trySend(..)", "demo.api.Box",
                "Box<String>", "Boxes::bounded", "IllegalStateException(\"two consumers at once: ...\")")) {
            assertThat(DocsClaims.isReference(reference)).as(reference).isTrue();
        }
    }

    @Test
    void shouldReadInlineCodeOutsideFencesAndAcrossALineBreak() {
        final String page = "Call `Box.trySend`\n\n```java\nBox.gone();\n```\nor `Boxes\n.nope` and ``Box.gone``.\n";
        assertThat(DocsClaims.codeSpans(page)).extracting(DocsClaims.Span::text)
                .containsExactly("Box.trySend", "Boxes .nope", "Box.gone");
        assertThat(synthetic("").checkReferences("p.md", page)).extracting(DocsClaims.Finding::line)
                .containsExactly(7);
    }

    @Test
    void shouldFlagADeadLinkAMissingAnchorAndAMissingQuotedSection(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("usage.md"), "# Usage\n\n## 3. A mailbox into a Flux, with `publishOn`\n"
                + "\n## Good to know\n");
        final Path page = dir.resolve("README.md");
        final String text = "See [usage](usage.md), [fused](usage.md#3-a-mailbox-into-a-flux-with-publishon),"
                + " [usage](usage.md), \"Good to know\".\n"
                + "Dead: [gone](docs/gone.md), [anchor](usage.md#no-such-heading), [usage](usage.md), \"Findings\";"
                + " [site](https://example.org/x.md) and `[code](nowhere.md)` are not checked.\n";
        final List<DocsClaims.Finding> findings = DocsClaims.checkLinks(page, text, "README.md");
        assertThat(findings).extracting(DocsClaims.Finding::line).containsExactly(2, 2, 2);
        assertThat(findings).extracting(DocsClaims.Finding::problem).satisfiesExactly(
                p -> assertThat(p).startsWith("no file"),
                p -> assertThat(p).contains("#no-such-heading"),
                p -> assertThat(p).contains("\"Findings\""));
    }

    @Test
    void shouldSlugHeadingsAsGitHubDoes() {
        assertThat(DocsClaims.slug("3. A mailbox into a Flux, with `publishOn` (fused)"))
                .isEqualTo("3-a-mailbox-into-a-flux-with-publishon-fused");
        assertThat(DocsClaims.anchors("# A\n## A\n```\n# not a heading\n```\n"))
                .containsExactlyInAnyOrder("a", "a-1");
    }

    /** A generator as the marker names one: a static {@code render(String)} from the results' JSON. */
    public static final class RowsGenerator {
        private static final Pattern ROW = Pattern.compile("\"name\":\\s*\"([^\"]+)\",\\s*\"ns\":\\s*([0-9.]+)");

        public static String render(String json) {
            final StringBuilder table = new StringBuilder("| case | ns/msg |\n|---|---:|\n");
            final Matcher row = ROW.matcher(json);
            while (row.find()) {
                table.append("| ").append(row.group(1)).append(" | ").append(row.group(2)).append(" |\n");
            }
            return table.toString();
        }
    }

    @Test
    void shouldFlagAGeneratedBlockWhenItDiffersFromItsResults(@TempDir Path dir) throws IOException {
        Files.createDirectories(dir.resolve("bench/results"));
        Files.writeString(dir.resolve("bench/results/run.json"),
                "[{\"name\": \"send\", \"ns\": 24.2}, {\"name\": \"abq\", \"ns\": 85.8}]");
        final String marker = "<!-- generated from bench/results/run.json by " + RowsGenerator.class.getName()
                + "; do not edit -->";
        final String good = "Intro\n" + marker + "\n| case | ns/msg |\n|---|---:|\n| send | 24.2 |\n| abq | 85.8 |\n"
                + DocsClaims.GENERATED_END + "\n";
        assertThat(DocsClaims.checkGeneratedBlocks(dir, good, "README.md", DocsClaims::generatorClass)).isEmpty();

        final String edited = good.replace("| send | 24.2 |", "| send | 20.0 |");
        assertThat(DocsClaims.checkGeneratedBlocks(dir, edited, "README.md", DocsClaims::generatorClass))
                .singleElement().satisfies(f -> {
                    assertThat(f.line()).isEqualTo(2);
                    assertThat(f.problem()).contains("expected <| send | 24.2 |> but the page has <| send | 20.0 |>");
                });

        final String unclosed = "Intro\n" + marker + "\n| case | ns/msg |\n";
        assertThat(DocsClaims.checkGeneratedBlocks(dir, unclosed, "README.md", DocsClaims::generatorClass))
                .singleElement().satisfies(f -> assertThat(f.problem()).contains("no " + DocsClaims.GENERATED_END));

        final String shown = "```\n" + marker + "\n| made up |\n" + DocsClaims.GENERATED_END + "\n```\n";
        assertThat(DocsClaims.checkGeneratedBlocks(dir, shown, "CONTRIBUTING.md", DocsClaims::generatorClass))
                .isEmpty();

        final String missing = good.replace("run.json", "gone.json");
        assertThat(DocsClaims.checkGeneratedBlocks(dir, missing, "README.md", DocsClaims::generatorClass))
                .singleElement().satisfies(f -> assertThat(f.problem()).contains("no results file"));

        final String unknown = good.replace(RowsGenerator.class.getName(), "demo.NoSuchGenerator");
        assertThat(DocsClaims.checkGeneratedBlocks(dir, unknown, "README.md", DocsClaims::generatorClass))
                .singleElement().satisfies(f -> assertThat(f.problem()).contains("no generator"));
    }
}

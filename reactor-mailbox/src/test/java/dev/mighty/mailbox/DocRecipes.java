package dev.mighty.mailbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps a document's code samples and the tests that run them the same: a recipe test marks each sample with
 * {@code // tag::name[]} … {@code // end::name[]}, and {@link #assertShownVerbatim} checks that the document shows
 * every marked region, in that order of names, as a {@code java} block, word for word.
 */
public final class DocRecipes {
    private static final Pattern REGION = Pattern.compile(
            "// tag::([a-z-]+)\\[]\\R(.*?)\\R[ \\t]*// end::\\1\\[]", Pattern.DOTALL);

    private DocRecipes() {
    }

    /**
     * @param testSource the recipe test's source, relative to the module ({@code src/test/java/...})
     * @param doc        the document, relative to the repository root ({@code docs/usage.md})
     * @param names      the regions the test must mark, in order
     */
    public static void assertShownVerbatim(String testSource, String doc, String... names) throws IOException {
        final Path module = Path.of("").toAbsolutePath();
        final Map<String, String> recipes = regions(Files.readString(module.resolve(testSource),
                StandardCharsets.UTF_8));
        assertThat(recipes.keySet()).containsExactly(names);
        final String text = Files.readString(findUp(module, doc), StandardCharsets.UTF_8);
        for (Map.Entry<String, String> recipe : recipes.entrySet()) {
            assertThat(text).as("%s shows recipe '%s' as in %s", doc, recipe.getKey(), testSource)
                    .contains("```java\n" + recipe.getValue() + "\n```");
        }
    }

    /** @return each region's lines, with the indentation of its least indented line removed */
    static Map<String, String> regions(String source) {
        final Map<String, String> regions = new LinkedHashMap<>();
        final Matcher matcher = REGION.matcher(source);
        while (matcher.find()) {
            final List<String> lines = new ArrayList<>(List.of(matcher.group(2).split("\\R", -1)));
            final int indent = lines.stream()
                    .filter(line -> !line.isBlank())
                    .mapToInt(line -> line.length() - line.stripLeading().length())
                    .min()
                    .orElse(0);
            lines.replaceAll(line -> line.isBlank() ? "" : line.substring(indent));
            regions.put(matcher.group(1), String.join("\n", lines));
        }
        return regions;
    }

    private static Path findUp(Path from, String relative) {
        for (Path dir = from; dir != null; dir = dir.getParent()) {
            final Path candidate = dir.resolve(relative);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError(relative + " not found above " + from);
    }
}

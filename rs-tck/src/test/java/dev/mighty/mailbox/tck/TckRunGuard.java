package dev.mighty.mailbox.tck;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;

import org.reactivestreams.tck.IdentityProcessorVerification;
import org.reactivestreams.tck.PublisherVerification;
import org.reactivestreams.tck.SubscriberBlackboxVerification;
import org.reactivestreams.tck.SubscriberWhiteboxVerification;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * Fails the build unless the TCK really ran: run by {@code exec:java} in the {@code test} phase, right after
 * Surefire (see {@code rs-tck/pom.xml}).
 *
 * <p>Why: the TCK is TestNG. Surefire runs it on the JUnit Platform only through {@code testng-engine}; when that
 * engine is missing or misaligned, Surefire discovers zero TestNG tests and still reports success. This guard
 * depends on neither JUnit nor TestNG at run time: it reads Surefire's XML reports of this run (the pom deletes
 * older ones before the tests) and checks them against the verification classes it finds in
 * {@code target/test-classes} by reflection, so a new verification class is guarded without editing anything.
 *
 * <p>For every concrete subclass of a TCK verification class it requires:
 * <ol>
 *   <li>a report {@code TEST-<class>.xml};</li>
 *   <li>at least the TCK's number of tests for that kind (Publisher 38, Subscriber whitebox 27, blackbox 26,
 *       IdentityProcessor 68);</li>
 *   <li>no failure or error;</li>
 *   <li>every required test reported (22 / 14 / 11 / 39: the {@code required_*} ones, plus the processor's
 *       unprefixed {@code mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream}) and passed,
 *       and every {@code stochastic_*} one passed, except those in {@link #DECLARED_SKIPS}: required tests the TCK
 *       itself skips because of a limitation the verification declares, and only when the skip carries the TCK's
 *       message for it. {@code optional_*} and {@code untested_*} tests may be skipped.</li>
 * </ol>
 * and at least one verification class of each kind. It prints a table and writes it, with every skipped test and
 * the TCK's reason, as Markdown to the summary file (the source of {@code docs/tck.md}); when it fails, it lists
 * every reason.
 *
 * <p>Arguments: {@code <test-classes dir> <surefire-reports dir> <summary.md> skipTests=<bool> test=<selection>}.
 * It steps aside when {@code skipTests} is true or {@code -Dtest=...} selects a subset (an unset property arrives
 * as the literal {@code ${test}}).
 */
public final class TckRunGuard {

    /** A TCK verification base class, its number of tests and of required tests (TCK 1.0.4). */
    enum Kind {
        PUBLISHER(PublisherVerification.class, 38, 22),
        SUBSCRIBER_WHITEBOX(SubscriberWhiteboxVerification.class, 27, 14),
        SUBSCRIBER_BLACKBOX(SubscriberBlackboxVerification.class, 26, 11),
        IDENTITY_PROCESSOR(IdentityProcessorVerification.class, 68, 39);

        final Class<?> base;
        final int tests;
        final int required;

        Kind(Class<?> base, int tests, int required) {
            this.base = base;
            this.tests = tests;
            this.required = required;
        }

        static Kind of(Class<?> type) {
            for (Kind kind : values()) {
                if (kind.base.isAssignableFrom(type)) {
                    return kind;
                }
            }
            return null;
        }
    }

    /**
     * Required tests the TCK skips by itself when the verification declares a limitation, keyed by test name, with
     * a part of the message the skip must carry. {@code IdentityProcessorVerification} runs these two only when
     * {@code maxSupportedSubscribers() >= 2}; a mailbox has one consumer, so its processor declares 1.
     */
    static final Map<String, String> DECLARED_SKIPS = Map.of(
            "required_spec104_mustCallOnErrorOnAllItsSubscribersIfItEncountersANonRecoverableError",
            "only supports 1 subscribers",
            "required_mustRequestFromUpstreamForElementsThatHaveBeenRequestedLongAgo",
            "only supports 1 subscribers");

    private TckRunGuard() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            throw new IllegalArgumentException("args: " + args.length
                    + " (expected: <test-classes> <surefire-reports> <summary.md> skipTests=<bool> test=<selection>)");
        }
        final Path testClasses = Paths.get(args[0]);
        final Path reports = Paths.get(args[1]);
        final Path summary = Paths.get(args[2]);
        final String skipTests = valueOf(args[3], "skipTests");
        final String selection = valueOf(args[4], "test");
        if (Boolean.parseBoolean(skipTests)) {
            log("skipped: -DskipTests");
            return;
        }
        if (!selection.isEmpty() && !selection.startsWith("${")) {
            log("skipped: -Dtest=" + selection + " selects a subset of the TCK");
            return;
        }

        final List<String> problems = new ArrayList<>();
        final Map<Class<?>, Kind> verifications = findVerifications(testClasses);
        for (Kind kind : Kind.values()) {
            if (!verifications.containsValue(kind)) {
                problems.add("no concrete " + kind.base.getSimpleName() + " in " + testClasses);
            }
        }
        final StringBuilder table = new StringBuilder()
                .append("| verification | TCK class | tests | passed | failed | skipped | required passed ")
                .append("| time (s) |\n")
                .append("|---|---|---:|---:|---:|---:|---:|---:|\n");
        final StringBuilder skips = new StringBuilder()
                .append("| verification | skipped test | reason given by the TCK |\n")
                .append("|---|---|---|\n");
        for (Map.Entry<Class<?>, Kind> e : verifications.entrySet()) {
            check(e.getKey(), e.getValue(), reports, problems, table, skips);
        }
        Files.createDirectories(summary.toAbsolutePath().getParent());
        Files.write(summary, (table + "\n" + skips).getBytes(StandardCharsets.UTF_8));
        log("\n" + table);
        log("skipped tests and their reasons: " + summary);
        if (!problems.isEmpty()) {
            throw new IllegalStateException("The Reactive Streams TCK did not run as required:\n  - "
                    + String.join("\n  - ", problems));
        }
        log("ok: " + verifications.size() + " verification classes ran, every required TCK test passed");
    }

    private static void check(Class<?> type, Kind kind, Path reports, List<String> problems, StringBuilder table,
            StringBuilder skips) throws Exception {
        final String name = type.getSimpleName();
        final Path report = reports.resolve("TEST-" + type.getName() + ".xml");
        if (!Files.isRegularFile(report)) {
            problems.add(name + ": no report " + report + " (did Surefire run the TestNG classes at all?)");
            table.append("| ").append(name).append(" | ").append(kind.base.getSimpleName())
                    .append(" | did not run | | | | | |\n");
            return;
        }
        final Document document = parse(report);
        int tests = 0;
        int passed = 0;
        int failed = 0;
        int skipped = 0;
        int required = 0;
        int requiredPassed = 0;
        final NodeList cases = document.getElementsByTagName("testcase");
        for (int i = 0; i < cases.getLength(); i++) {
            final Element testcase = (Element) cases.item(i);
            final String test = methodName(testcase.getAttribute("name"));
            final Element failure = firstChild(testcase, "failure", "error");
            final Element skip = firstChild(testcase, "skipped");
            final boolean mustPass = !test.startsWith("optional_") && !test.startsWith("untested_");
            final boolean isRequired = mustPass && !test.startsWith("stochastic_");
            tests++;
            if (isRequired) {
                required++;
            }
            if (failure != null) {
                failed++;
                problems.add(name + "." + test + " failed: " + failure.getAttribute("message"));
            } else if (skip != null) {
                skipped++;
                final String reason = skipReason(skip);
                skips.append("| ").append(name).append(" | `").append(test).append("` | ").append(reason)
                        .append(" |\n");
                final String declared = DECLARED_SKIPS.get(test);
                if (mustPass && (declared == null || !reason.contains(declared))) {
                    problems.add(name + "." + test + " must pass but was skipped: " + reason);
                }
            } else {
                passed++;
                if (isRequired) {
                    requiredPassed++;
                }
            }
        }
        if (tests < kind.tests) {
            problems.add(name + ": " + tests + " tests ran (expected: >= " + kind.tests + " for a "
                    + kind.base.getSimpleName() + ")");
        }
        if (required < kind.required) {
            problems.add(name + ": " + required + " required tests reported (expected: >= " + kind.required
                    + " for a " + kind.base.getSimpleName() + ")");
        }
        final String seconds = document.getDocumentElement().getAttribute("time");
        table.append("| ").append(name).append(" | ").append(kind.base.getSimpleName())
                .append(" | ").append(tests).append(" | ").append(passed).append(" | ").append(failed)
                .append(" | ").append(skipped).append(" | ").append(requiredPassed).append(" of ").append(required)
                .append(" | ").append(seconds).append(" |\n");
    }

    /** The skip's message: the attribute if there is one, else the first line of the recorded exception. */
    private static String skipReason(Element skip) {
        String reason = skip.getAttribute("message");
        if (reason.isBlank()) {
            reason = skip.getTextContent().strip();
            final int eol = reason.indexOf('\n');
            reason = eol < 0 ? reason : reason.substring(0, eol).strip();
        }
        final String prefix = "org.testng.SkipException: ";
        return reason.startsWith(prefix) ? reason.substring(prefix.length()) : reason;
    }

    /** Concrete TCK verification classes under {@code testClasses}, by name. */
    private static Map<Class<?>, Kind> findVerifications(Path testClasses) throws IOException {
        final ClassLoader loader = Thread.currentThread().getContextClassLoader();
        final List<String> names;
        try (Stream<Path> files = Files.walk(testClasses)) {
            names = files.map(p -> testClasses.relativize(p).toString())
                    .filter(p -> p.endsWith(".class") && !p.contains("$"))
                    .map(p -> p.substring(0, p.length() - ".class".length()).replace(File.separatorChar, '.'))
                    .sorted()
                    .collect(Collectors.toList());
        }
        final Map<Class<?>, Kind> found = new LinkedHashMap<>();
        for (String name : names) {
            final Class<?> type;
            try {
                type = Class.forName(name, false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IllegalStateException("cannot load " + name + " from " + testClasses, e);
            }
            final Kind kind = Kind.of(type);
            if (kind != null && !Modifier.isAbstract(type.getModifiers())) {
                found.put(type, kind);
            }
        }
        return found;
    }

    private static Document parse(Path report) throws Exception {
        final DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
        factory.setExpandEntityReferences(false);
        final DocumentBuilder builder = factory.newDocumentBuilder();
        return builder.parse(report.toFile());
    }

    private static Element firstChild(Element parent, String... tags) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element) {
                for (String tag : tags) {
                    if (tag.equals(n.getNodeName())) {
                        return (Element) n;
                    }
                }
            }
        }
        return null;
    }

    /** JUnit Platform reports may name a method {@code name()} or {@code name(Type)}: keep the name only. */
    private static String methodName(String reported) {
        final int paren = reported.indexOf('(');
        return paren < 0 ? reported : reported.substring(0, paren);
    }

    private static String valueOf(String arg, String key) {
        if (!arg.startsWith(key + "=")) {
            throw new IllegalArgumentException("argument: " + arg + " (expected: " + key + "=<value>)");
        }
        return arg.substring(key.length() + 1);
    }

    private static void log(String line) {
        System.out.println("[TckRunGuard] " + line);
    }
}

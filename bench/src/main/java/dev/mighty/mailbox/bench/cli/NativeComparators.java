package dev.mighty.mailbox.bench.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The out-of-process comparators of {@code --native}: the programs in {@code bench/native} (tokio's mpsc, a Go
 * channel, two C++ SPSC rings), built by {@code bench/native/run.sh}. Each runs the CLI's workload and protocol
 * in its own process (its header comment says how) with the CLI's settings, and prints one JSON object per row
 * on a line of its own, with every measured iteration's time; the CLI records those times into the same
 * histograms as its own rows.
 *
 * <p>They run after the JVM rows, one program at a time, so they are not interleaved with them: their rows
 * are marked out-of-process in the table, the chart and the results files.
 */
final class NativeComparators {
    static final String RUST_TOKIO = "rust_tokio_mailbox_throughput";
    static final String RUST_TOKIO_DRAIN = "rust_tokio_drain_mailbox_throughput";
    static final String GO_CHAN = "go_chan_mailbox_throughput";
    static final String CPP_SPSC_BOOST = "cpp_spsc_boost_mailbox_throughput";
    static final String CPP_SPSC_RING = "cpp_spsc_ring_mailbox_throughput";

    /** A program of {@code bench/native}: its folder and where {@code run.sh} puts its binary. */
    record Program(String name, String binary) {
        Path binary(Path nativeDir) {
            return nativeDir.resolve(binary);
        }
    }

    static final List<Program> PROGRAMS = List.of(
            new Program("rust-tokio", "rust-tokio/target/release/rust-tokio"),
            new Program("go-chan", "go-chan/target/go-chan"),
            new Program("cpp-spsc", "cpp-spsc/target/cpp-spsc"));

    /** A program runs at most this long (a hung program fails the run instead of hanging it). */
    static final long TIMEOUT_MINUTES = 20;

    /**
     * One row of a program's output.
     *
     * @param nanos every measured iteration's time, in order
     */
    record Row(String name, String description, String toolchain, String library, long msgs, long capacity,
            long warmup, long iterations, long[] nanos) {
    }

    private NativeComparators() {
    }

    /**
     * Runs {@code program} with the CLI's settings; its stderr (progress) goes to {@code stderr}.
     *
     * @return the program's rows
     * @throws IllegalStateException if it failed (e.g. a per-iteration check), timed out, or printed no row
     */
    static List<Row> run(Path binary, List<String> args, PrintStream stderr) throws IOException, InterruptedException {
        final List<String> command = new ArrayList<>();
        command.add(binary.toString());
        command.addAll(args);
        final Path out = Files.createTempFile("mailbox-bench-native", ".out");
        final Path err = Files.createTempFile("mailbox-bench-native", ".err");
        try {
            final Process process = new ProcessBuilder(command)
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            final boolean exited = process.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES);
            if (!exited) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
            final String errors = Files.readString(err, StandardCharsets.UTF_8);
            stderr.print(errors);
            if (!exited) {
                throw new IllegalStateException(binary + ": still running after " + TIMEOUT_MINUTES + " minutes");
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException(binary + ": exit status " + process.exitValue() + ": "
                        + lastLine(errors));
            }
            final List<Row> rows = parse(Files.readString(out, StandardCharsets.UTF_8));
            if (rows.isEmpty()) {
                throw new IllegalStateException(binary + ": printed no JSON row");
            }
            return rows;
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /**
     * Builds {@code program} with {@code run.sh --build-only --no-install --program NAME} in {@code nativeDir} (its
     * output to {@code stderr}), run before any native row is measured. It installs nothing: a missing toolchain
     * makes it print its reason and leaves the program unbuilt.
     *
     * @return whether the program's binary is there now
     */
    static boolean build(Path nativeDir, Program program, PrintStream stderr) throws IOException, InterruptedException {
        final Path script = nativeDir.resolve("run.sh");
        if (!Files.isRegularFile(script)) {
            stderr.println("[native] no " + script + ": cannot build " + program.name());
            return false;
        }
        stderr.println("[native] " + program.name() + " is not built: " + script + " --build-only --no-install "
                + "--program " + program.name());
        final Path log = Files.createTempFile("mailbox-bench-native", ".build");
        try {
            final Process process = new ProcessBuilder("bash", script.toString(), "--build-only", "--no-install",
                    "--program", program.name())
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            if (!process.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
                stderr.println("[native] " + program.name() + ": the build still ran after " + TIMEOUT_MINUTES
                        + " minutes");
            }
            stderr.print(Files.readString(log, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(log);
        }
        return Files.isExecutable(program.binary(nativeDir));
    }

    private static String lastLine(String text) {
        final String t = text.strip();
        final int i = t.lastIndexOf('\n');
        return i < 0 ? t : t.substring(i + 1);
    }

    /** @return the rows of a program's stdout: its lines that start with '{' */
    static List<Row> parse(String stdout) {
        final List<Row> rows = new ArrayList<>();
        for (String line : stdout.split("\n")) {
            if (line.startsWith("{")) {
                rows.add(row(new Json(line).object()));
            }
        }
        return rows;
    }

    private static Row row(Map<String, Object> o) {
        final Object times = o.get("iterationNanos");
        if (!(times instanceof List<?> list)) {
            throw new IllegalArgumentException("no iterationNanos in " + o.keySet());
        }
        final long[] nanos = new long[list.size()];
        for (int i = 0; i < nanos.length; i++) {
            nanos[i] = ((Number) list.get(i)).longValue();
        }
        final Row row = new Row(string(o, "name"), string(o, "description"), string(o, "toolchain"),
                string(o, "library"), number(o, "msgs"), number(o, "capacity"), number(o, "warmup"),
                number(o, "iterations"), nanos);
        if (nanos.length != row.iterations()) {
            throw new IllegalArgumentException(row.name() + ": " + nanos.length + " iteration times (expected: "
                    + row.iterations() + ")");
        }
        return row;
    }

    private static String string(Map<String, Object> o, String key) {
        if (!(o.get(key) instanceof String s)) {
            throw new IllegalArgumentException("no string " + key + " in " + o.keySet());
        }
        return s;
    }

    private static long number(Map<String, Object> o, String key) {
        if (!(o.get(key) instanceof Number n)) {
            throw new IllegalArgumentException("no number " + key + " in " + o.keySet());
        }
        return n.longValue();
    }

    /** The little JSON the programs print: objects, arrays, strings, integers, decimals, true/false/null. */
    static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Map<String, Object> object() {
            final Object v = value();
            skipSpace();
            if (i != s.length() || !(v instanceof Map<?, ?>)) {
                throw error("a single JSON object");
            }
            @SuppressWarnings("unchecked")
            final Map<String, Object> map = (Map<String, Object>) v;
            return map;
        }

        private Object value() {
            skipSpace();
            if (i >= s.length()) {
                throw error("a value");
            }
            final char c = s.charAt(i);
            if (c == '{') {
                i++;
                final Map<String, Object> map = new LinkedHashMap<>();
                skipSpace();
                if (peek('}')) {
                    return map;
                }
                do {
                    skipSpace();
                    final Object key = value();
                    if (!(key instanceof String k)) {
                        throw error("a string key");
                    }
                    skipSpace();
                    expect(':');
                    map.put(k, value());
                    skipSpace();
                } while (peek(','));
                expect('}');
                return map;
            }
            if (c == '[') {
                i++;
                final List<Object> list = new ArrayList<>();
                skipSpace();
                if (peek(']')) {
                    return list;
                }
                do {
                    list.add(value());
                    skipSpace();
                } while (peek(','));
                expect(']');
                return list;
            }
            if (c == '"') {
                return string();
            }
            for (String word : new String[] {"true", "false", "null"}) {
                if (s.startsWith(word, i)) {
                    i += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            final int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            final String n = s.substring(start, i);
            try {
                return n.matches("-?\\d+") ? (Object) Long.valueOf(n) : (Object) Double.valueOf(n);
            } catch (NumberFormatException e) {
                throw error("a number");
            }
        }

        private String string() {
            expect('"');
            final StringBuilder sb = new StringBuilder();
            while (i < s.length()) {
                final char c = s.charAt(i++);
                if (c == '"') {
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    break;
                }
                final char e = s.charAt(i++);
                switch (e) {
                    case 'n' -> sb.append('\n');
                    case 't' -> sb.append('\t');
                    case 'r' -> sb.append('\r');
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw error("four hex digits");
                        }
                        sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> sb.append(e);
                }
            }
            throw error("the end of a string");
        }

        private void skipSpace() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private boolean peek(char c) {
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private void expect(char c) {
            if (!peek(c)) {
                throw error("'" + c + "'");
            }
        }

        private IllegalArgumentException error(String expected) {
            return new IllegalArgumentException(String.format(Locale.ROOT, "JSON: expected %s at offset %d of: %s",
                    expected, i, s.length() > 200 ? s.substring(0, 200) + "..." : s));
        }
    }
}

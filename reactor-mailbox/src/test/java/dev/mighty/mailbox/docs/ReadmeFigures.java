package dev.mighty.mailbox.docs;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The README's figure block, made from one run's {@code results.json} of the benchmark CLI (the README names the
 * file in its generated-block marker, and {@code DocsClaimsTest} checks that the block is what this class makes of
 * it): each face against the comparator on that face's job, median ns per message, the spread (p95 / median) beside
 * each, and the same-run ratio. A generator, so that no figure in the README is typed by hand.
 */
public final class ReadmeFigures {
    /** The rows: this face, what it is, the comparator, what that is. */
    private static final String[][] ROWS = {
        {"mailbox_throughput", "`Mailbox` `send` / `recvMany`",
            "abq_mailbox_throughput", "`ArrayBlockingQueue` `put` / `take` + `drainTo`"},
        {"mailbox_throughput", "`Mailbox` `send` / `recvMany`",
            "jctools_mpsc_mailbox_throughput", "JCTools `MpscArrayQueue` `offer` / `drain`, spinning"},
        {"spsc_mailbox_throughput", "`Mailbox`, single producer, `send` / `recvMany`",
            "jctools_spsc_mailbox_throughput",
            "JCTools `SpscArrayQueue` `offer` / `drain`, a consumer that never sleeps"},
        {"spsc_mailbox_throughput", "`Mailbox`, single producer, `send` / `recvMany`",
            "jctools_spsc_parking_mailbox_throughput", "the same ring plus the fence a consumer that parks needs"},
        {"sinks_4p_mailbox_throughput", "`MailboxSinks`, 4 threads emitting",
            "reactor_sink_4p_mailbox_throughput", "unicast sink, `emitNext` + retrying handler"},
        {"flux_single_mailbox_throughput", "`MailboxFlux` → `publishOn(newSingle)`",
            "reactor_sink_single_mailbox_throughput", "unicast sink → `publishOn(newSingle)`"},
    };
    /** One result: the CLI writes each on a line of its own. */
    private static final Pattern RESULT = Pattern.compile("\\{\\s*\"name\"\\s*:\\s*\"([a-z0-9_]+)\"([^\\n]*)");

    private ReadmeFigures() {
    }

    /**
     * @param json the CLI's {@code results.json}
     * @return the Markdown block
     */
    public static String render(String json) {
        final Map<String, double[]> rows = new LinkedHashMap<>();
        final Matcher m = RESULT.matcher(json);
        while (m.find()) {
            final double ns = number(m.group(2), "nsPerMessage");
            final double spread = number(m.group(2), "spreadP95OverMedian");
            if (!Double.isNaN(ns)) {
                rows.putIfAbsent(m.group(1), new double[] {ns, spread});
            }
        }
        final List<String> out = new ArrayList<>();
        out.add("Throughput in one run of `" + string(json, "command") + "` (" + string(json, "jvm") + ", "
                + (long) number(json, "cores") + " CPUs; one producer, one consumer unless said, 1,000 messages per"
                + " iteration; median ns per message, (p95/median) beside it; same-run ratios):");
        out.add("");
        out.add("| this face | ns/msg | against | ns/msg | ratio |");
        out.add("|---|---:|---|---:|---:|");
        for (String[] row : ROWS) {
            final double[] face = rows.get(row[0]);
            final double[] against = rows.get(row[2]);
            if (face == null || against == null) {
                continue; // not in this run
            }
            final double ratio = against[0] / face[0];
            out.add("| " + row[1] + " | " + cell(face) + " | " + row[3] + " | " + cell(against) + " | "
                    + verdict(ratio) + " |");
        }
        return String.join("\n", out) + "\n";
    }

    /**
     * Prints the block for a results file, to paste between the README's markers after a new run.
     *
     * @param args the results file's path
     * @throws java.io.IOException if it cannot be read
     */
    public static void main(String[] args) throws java.io.IOException {
        System.out.print(render(java.nio.file.Files.readString(java.nio.file.Path.of(args[0]))));
    }

    /** @return the ratio in words: within 5% is level, not "1.0× faster" */
    private static String verdict(double ratio) {
        if (ratio >= 0.95 && ratio <= 1.05) {
            return String.format(Locale.ROOT, "level (%.2f×)", ratio);
        }
        return ratio > 1.0 ? String.format(Locale.ROOT, "the mailbox %.1f× faster", ratio)
                : String.format(Locale.ROOT, "the mailbox %.1f× slower", 1.0 / ratio);
    }

    private static String cell(double[] r) {
        return String.format(Locale.ROOT, "%.1f (%.1f)", r[0], r[1]);
    }

    private static double number(String json, String key) {
        final Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*(-?[0-9.eE+-]+)").matcher(json);
        return m.find() ? Double.parseDouble(m.group(1)) : Double.NaN;
    }

    private static String string(String json, String key) {
        final Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"").matcher(json);
        return m.find() ? m.group(1).replace("\\\"", "\"").replace("\\\\", "\\") : "?";
    }
}

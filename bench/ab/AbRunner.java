import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.LongUnaryOperator;

/**
 * Same-JVM A/B of two builds of reactor-mailbox: the same {@code ab.Workload} is loaded twice, each copy in its
 * own class loader next to one build's jar, and the two run in alternation (A B, then B A, so neither build
 * always goes first) with a raw-mailbox control pair from the same builds. On a shared 2-vCPU machine whose
 * cache-line round trip moves 1.4-10x between runs, only figures taken this close together compare.
 *
 * <p>Usage (see run.sh): {@code AbRunner A.jar B.jar frames|raw PAYLOAD_BYTES ITERATIONS}. With
 * {@code -Dab.lone=MICROS} each iteration is one lone message (see {@code ab.Workload}) and the figures are its
 * latency in ns, with p99.
 */
public final class AbRunner {
    private static final int MESSAGES = 1000;
    private static final boolean LONE = System.getProperty("ab.lone") != null;

    public static void main(String[] args) throws Exception {
        final String[] jars = {args[0], args[1]};
        final String kind = args[2];
        final int payload = Integer.parseInt(args[3]);
        final int iterations = Integer.parseInt(args[4]);
        final Path classes = Path.of(System.getProperty("ab.classes"));
        final LongUnaryOperator[] run = new LongUnaryOperator[4]; // A kind, B kind, A raw, B raw
        for (int b = 0; b < 2; b++) {
            final URLClassLoader loader = new URLClassLoader(
                    new URL[] {Path.of(jars[b]).toUri().toURL(), classes.toUri().toURL()}, null);
            final Class<?> workload = loader.loadClass("ab.Workload");
            run[b] = (LongUnaryOperator) workload.getConstructor(String.class, int.class).newInstance(kind, payload);
            run[2 + b] = (LongUnaryOperator) workload.getConstructor(String.class, int.class).newInstance("raw", payload);
        }
        final long[][] ns = new long[4][iterations];
        for (int k = -iterations / 2; k < iterations; k++) { // the first half-run is warm-up
            final int first = k & 1;
            for (final int i : new int[] {first, 1 - first, 2 + first, 3 - first}) {
                final long t = run[i].applyAsLong(MESSAGES);
                if (k >= 0) {
                    ns[i][k] = t;
                }
            }
        }
        final String[] names = {"A " + kind, "B " + kind, "A raw", "B raw"};
        final int per = LONE ? 1 : MESSAGES;
        final String unit = LONE ? "ns (lone message latency)" : "ns/msg";
        final double[] median = new double[4];
        for (int i = 0; i < 4; i++) {
            Arrays.sort(ns[i]);
            median[i] = ns[i][iterations / 2] / (double) per;
            System.out.printf("%-12s p10=%7.1f  median=%7.1f  p90=%7.1f%s %s%n", names[i],
                    ns[i][iterations / 10] / (double) per, median[i], ns[i][iterations * 9 / 10] / (double) per,
                    LONE ? String.format("  p99=%9.1f", ns[i][iterations * 99 / 100] / (double) per) : "", unit);
        }
        System.out.printf("B/A %s median = %.2f   (control, same code in both: B/A raw = %.2f)%n", kind,
                median[1] / median[0], median[3] / median[2]);
        System.out.printf("%s/raw: A = %.2f  B = %.2f%n", kind, median[0] / median[2], median[1] / median[3]);
        System.exit(0);
    }
}

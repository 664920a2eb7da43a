#!/usr/bin/env bash
# The many-core run (docs/benchmarks.md, "Many cores"): the README's CLI pinned with the continuous stream, then
# unpinned, then the JMH hand-off rows pinned, each bounded; results and the machine's description go to $OUT.
# Run from the repository root with the bundle of bundle.sh in the folder this script lies in.
set -u
B="$(cd "$(dirname "$0")" && pwd)"
OUT="${OUT:?set OUT to the folder for the results}"
cd /tmp && tar xzf "$B/jre17.tgz" && J=/tmp/jre17/bin/java
{ date -u; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|MHz'; uptime; $J -version 2>&1; } \
  > "$OUT/machine.txt" 2>&1
# The exit status is the CLI's: it writes results.md and results.json, then the chart (which needs fonts).
timeout 180 $J -jar "$B/slim.jar" --pin --stream --out /tmp/pin > /tmp/pin.log 2>&1; echo "pin rc=$?" >> "$OUT/machine.txt"
grep -v '^\[' /tmp/pin.log | tail -4 >> "$OUT/machine.txt"
cp /tmp/pin/results.json "$OUT/pin_results.json"; cp /tmp/pin/results.md "$OUT/pin_results.md"
uptime >> "$OUT/machine.txt"
timeout 150 $J -jar "$B/slim.jar" --out /tmp/unpin > /tmp/unpin.log 2>&1; echo "unpin rc=$?" >> "$OUT/machine.txt"
grep -v '^\[' /tmp/unpin.log | tail -4 >> "$OUT/machine.txt"
cp /tmp/unpin/results.json "$OUT/unpin_results.json"; cp /tmp/unpin/results.md "$OUT/unpin_results.md"
R='ComparatorThroughputBenchmark.(mailbox_batched_recv|jctools_mpsc_drain|jctools_mpsc_blocking_take_drain|jctools_spsc_parking_drain|jctools_spsc_drain)$'
R="$R"'|HandOffBenchmark.(publisher_executor|raw_batched_recv|subscriber_try_recv_many|flux_single|reactor_sink_single|raw_try_send_try_recv_many)$'
R="$R"'|MailboxThroughputBenchmark.spsc_batched_recv_empty_payload$'
timeout 160 $J -cp "$B/slim.jar" org.openjdk.jmh.Main "$R" -f 1 -wi 3 -i 5 -w 1s -r 1s \
  -jvmArgsAppend -Dmailbox.bench.pin=true -rf json -rff "$OUT/jmh_pin.json" > /tmp/jmh.log 2>&1
echo "jmh rc=$?" >> "$OUT/machine.txt"
tail -30 /tmp/jmh.log > "$OUT/jmh_tail.txt"
uptime >> "$OUT/machine.txt"
cat "$OUT/machine.txt"

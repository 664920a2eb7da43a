#!/usr/bin/env bash
# Same-JVM A/B of two reactor-mailbox builds (see AbRunner.java).
#   bench/ab/run.sh A.jar B.jar [frames|raw] [payload bytes] [iterations]
# AB_JAVA_OPTS=-Dab.local=true runs both sides of each send/receive on one thread (no cross-core traffic).
# AB_JAVA_OPTS=-Dab.lone=20 sends one message per iteration after the consumer has waited 20 us: its latency, p99.
# Build each side with `mvn -B -q -o -DskipTests package -pl reactor-mailbox` and copy
# reactor-mailbox/target/reactor-mailbox-0.1.0-SNAPSHOT.jar aside before changing the code.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
javac -d "$out/classes" -cp "$1" "$here/ab/Workload.java"
javac -d "$out" "$here/AbRunner.java"
java ${AB_JAVA_OPTS:-} -Dab.classes="$out/classes" -cp "$out" AbRunner "$1" "$2" "${3:-frames}" "${4:-32}" "${5:-20000}"

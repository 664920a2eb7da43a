#!/usr/bin/env bash
# Packs what the many-core run needs into DIR (default .devbench, which .git/info/exclude should ignore) for a
# machine with no JDK and no network: a jlinked Java runtime of this JDK (tar.gz) and the benchmark jar without the
# Kafka, Pekko and PDF dependencies that the CLI's default rows and the JMH hand-off rows never load (about 42 MB
# in all, against 71 MB for the jar alone), plus run.sh beside them.
#   mvn -B -q -pl reactor-mailbox,bench -am package -DskipTests && bench/manycore/bundle.sh [DIR]
# then, on the other machine, from the repository root: OUT=<folder for the results> bash DIR/run.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-$root/.devbench}"
mkdir -p "$dir" && dir="$(cd "$dir" && pwd)" # absolute: the jar is zipped from inside a temporary folder
jar="$root/bench/target/mailbox-bench.jar"
[ -f "$jar" ] || { echo "build first: $jar is missing" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/jar"
(cd "$work/jar" && unzip -q "$jar" \
  && rm -rf org/apache/kafka kafka common org/apache/pekko scala com/typesafe org/xerial net/jpountz com/github/luben \
       com/github/benmanes com/fasterxml org/yaml org/jose4j com/dynatrace org/apache/logging org/apache/pdfbox \
       org/apache/fontbox de/rototor org/apache/commons/collections org/apache/commons/beanutils \
       org/apache/commons/digester org/apache/commons/validator aix darwin* freebsd* win sunos* \
  && find . -path './linux/*' -not -path './linux/amd64*' -delete 2>/dev/null || true)
rm -f "$dir/slim.jar"
(cd "$work/jar" && zip -q -r -9 "$dir/slim.jar" .)
rm -rf "$work/jre"
"${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}/bin/jlink" \
  --add-modules java.base,java.management,jdk.management,java.logging,jdk.unsupported,java.desktop,jdk.jfr,java.xml,java.naming,jdk.management.jfr \
  --strip-debug --no-header-files --no-man-pages --compress=2 --output "$work/jre17"
tar czf "$dir/jre17.tgz" -C "$work" jre17
cp "$root/bench/manycore/run.sh" "$dir/run.sh"
du -sh "$dir"

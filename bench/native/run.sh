#!/usr/bin/env bash
# The out-of-process comparators of mailbox_throughput: tokio's mpsc (Rust), a buffered chan (Go) and two SPSC
# rings (C++: boost::lockfree::spsc_queue and a hand-written cached-index ring), each a small program running
# the Java CLI's workload and protocol (see the header comment of each program).
#
#   bench/native/run.sh [--build-only] [--no-install] [--program NAME]... [-- PROGRAM-OPTIONS]
#
#   --build-only     build, do not run
#   --no-install     never install packages (by default, when run as root, missing Debian packages are
#                    installed with apt-get, after one apt-get update, and the script says so)
#   --program NAME   rust-tokio, go-chan or cpp-spsc (repeatable; default: all three)
#   PROGRAM-OPTIONS  passed to each program: --quick, --msgs N, --capacity N, --warmup N, --iterations N
#                    (the CLI's defaults when absent: 1000 msgs, capacity 1024, 2000 warm-up, 8000 measured)
#
# Everything builds offline: cargo against Debian's packaged crates (rust-tokio/.cargo/config.toml), Go with
# GOPROXY=off and the standard library only, g++ -O2 -std=c++17 -pthread. Binaries go to */target/. A
# comparator that cannot be built here prints one line "skipped: <why>" and the script still exits 0; a
# program whose per-iteration check fails makes it exit 1.
#
# The rows appear in the Java CLI's table with: java -jar bench/target/mailbox-bench.jar --native
# (which runs the programs built here with the CLI's own settings).
set -u
cd "$(dirname "$0")" || exit 1
HERE=$(pwd)

build_only=0
install=1
programs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build-only) build_only=1 ;;
        --no-install) install=0 ;;
        --program)
            case "${2:-}" in
                rust-tokio|go-chan|cpp-spsc) programs+=("$2"); shift ;;
                *) echo "--program: '${2:-}' (expected: rust-tokio, go-chan or cpp-spsc)" >&2; exit 2 ;;
            esac ;;
        --) shift; break ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ ${#programs[@]} -eq 0 ] && programs=(rust-tokio go-chan cpp-spsc)

# rustup's cargo, where the machine has one, is preferred to none at all
if ! command -v cargo >/dev/null 2>&1 && [ -x "${HOME:-/root}/.cargo/bin/cargo" ]; then
    PATH="$PATH:${HOME:-/root}/.cargo/bin"
fi

tokio_source() { ls -d /usr/share/cargo/registry/tokio-1.* 2>/dev/null | head -n 1; }

# What each program lacks, as Debian package names (empty: nothing missing).
missing_packages() {
    case "$1" in
        rust-tokio)
            command -v cargo >/dev/null 2>&1 || echo cargo
            [ -n "$(tokio_source)" ] || echo librust-tokio-dev ;;
        go-chan)
            command -v go >/dev/null 2>&1 || echo golang-go ;;
        cpp-spsc)
            command -v g++ >/dev/null 2>&1 || echo g++
            [ -f /usr/include/boost/lockfree/spsc_queue.hpp ] || echo libboost-dev ;;
    esac
}

updated=0
install_packages() {
    if [ "$install" -eq 0 ] || [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        return 1
    fi
    echo "installing Debian packages: $*" >&2
    if [ "$updated" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || return 1
        updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

binary() {
    case "$1" in
        rust-tokio) echo "$HERE/rust-tokio/target/release/rust-tokio" ;;
        go-chan) echo "$HERE/go-chan/target/go-chan" ;;
        cpp-spsc) echo "$HERE/cpp-spsc/target/cpp-spsc" ;;
    esac
}

build() {
    case "$1" in
        rust-tokio)
            (cd rust-tokio && cargo build --release --offline --quiet) ;;
        go-chan)
            (cd go-chan && GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GO111MODULE=on \
                go build -o target/go-chan .) ;;
        cpp-spsc)
            mkdir -p cpp-spsc/target &&
                g++ -O2 -std=c++17 -pthread -o cpp-spsc/target/cpp-spsc cpp-spsc/mailbox_throughput.cpp ;;
    esac
}

versions() {
    case "$1" in
        rust-tokio) echo "$(cargo --version 2>/dev/null); $(rustc --version 2>/dev/null); tokio $(basename "$(tokio_source)" | sed 's/^tokio-//') from Debian's packaged crates" ;;
        go-chan) go version 2>/dev/null ;;
        cpp-spsc) echo "$(g++ --version 2>/dev/null | head -n 1); boost $(dpkg-query -W -f '${Version}' libboost-dev 2>/dev/null || echo '(headers)')" ;;
    esac
}

status=0
built=()
for p in "${programs[@]}"; do
    missing=$(missing_packages "$p" | tr '\n' ' ' | sed 's/ *$//')
    if [ -n "$missing" ]; then
        if ! install_packages $missing; then
            if [ "$install" -eq 0 ] || [ "$(id -u)" -ne 0 ]; then
                echo "skipped: $p: missing $missing (run as root without --no-install to install them)"
            else
                echo "skipped: $p: apt-get could not install $missing"
            fi
            continue
        fi
        missing=$(missing_packages "$p" | tr '\n' ' ' | sed 's/ *$//')
        if [ -n "$missing" ]; then
            echo "skipped: $p: still missing after apt-get: $missing"
            continue
        fi
    fi
    echo "building $p: $(versions "$p")" >&2
    if ! build "$p" >&2; then
        echo "skipped: $p: the offline build failed (output above)"
        continue
    fi
    built+=("$p")
done

[ "$build_only" -eq 1 ] && exit 0

mkdir -p "$HERE/target"
for p in "${built[@]}"; do
    echo "running $p $*" >&2
    out="$HERE/target/$p.out"
    if "$(binary "$p")" "$@" > "$out"; then
        grep -v '^{' "$out"
    else
        echo "$p: failed (exit status $?)" >&2
        status=1
    fi
done
[ ${#built[@]} -gt 0 ] && echo "JSON lines (with every iteration's time): $HERE/target/*.out" >&2
exit $status

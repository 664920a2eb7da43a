// go_chan_mailbox_throughput: the reference page's "Go buffered chan" row (left pending there), run with
// exactly the workload and protocol of the Java CLI (bench/src/main/java/dev/mighty/mailbox/bench/cli):
//
//   - two goroutines alive for the whole run, GOMAXPROCS=2: the main goroutine produces and runs the
//     schedule, a second goroutine consumes;
//   - a buffered channel of --capacity (default 1024) carrying a 16-byte frame descriptor by value
//     (kind uint32 = 7, length uint32 = 0, id uint64 = index): ch <- f / f := <-ch, the channel's own
//     blocking on full and empty;
//   - --msgs messages per iteration (default 1000; 10000 is the microbenchmark size), --warmup iterations
//     (default 2000) then --iterations measured iterations (default 8000); --quick = 500 / 1000;
//   - per iteration, the CLI's handshake: the producer publishes the job, waits until the consumer is ready,
//     gives the start signal and produces; the consumer times itself from the start signal to its last
//     message and checks that it received exactly 0 .. n-1, in order (a failed check exits with status 1);
//     the handshake spins 1000 times, then yields (runtime.Gosched), as the CLI's TwoThreadHarness does.
//
// Output (stdout): the reference line, then one JSON object on one line (the CLI's --native reads it).
// Progress and failures go to stderr. --fault swaps messages 0 and 1 of the first iteration: the check must
// then fail (the smoke test's proof that the check runs).
//
// Standard library only; build: GOPROXY=off GOFLAGS=-mod=mod go build (bench/native/run.sh does it).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	name          = "go_chan_mailbox_throughput"
	description   = "Go buffered chan of 16 B frames (capacity): ch <- f / <-ch; 2 goroutines, GOMAXPROCS=2"
	kind          = 7
	harnessSpins  = 1000 // TwoThreadHarness.SPINS
	cacheLinePads = 7    // uint64s after each handshake word: one word per 64-byte line
)

type frame struct {
	kind   uint32
	length uint32
	id     uint64
}

// orderCheck is the CLI's OrderCheck: counts one iteration's messages and remembers the first one out of place.
type orderCheck struct {
	received, expected uint64
	firstBadIndex      int64
	firstBadValue      uint64
}

func (c *orderCheck) begin(n uint64) {
	c.received, c.expected, c.firstBadIndex = 0, n, -1
}

func (c *orderCheck) check(f frame) {
	if (f.id != c.received || f.kind != kind || f.length != 0) && c.firstBadIndex < 0 {
		c.firstBadIndex, c.firstBadValue = int64(c.received), f.id
	}
	c.received++
}

func (c *orderCheck) ok() bool { return c.received == c.expected && c.firstBadIndex < 0 }

// harness is the CLI's TwoThreadHarness reduced to iterations: one job at a time, in handshakes. The job and
// result fields are written before the atomic store of generation (resp. done) and read after the peer's
// atomic load of it (Go's atomics are sequentially consistent).
type harness struct {
	_          [8]uint64
	generation uint64
	_          [cacheLinePads]uint64
	ready      uint64
	_          [cacheLinePads]uint64
	goSignal   uint64
	_          [cacheLinePads]uint64
	done       uint64
	_          [cacheLinePads]uint64

	stop    bool
	count   uint64
	elapsed int64
	ok      bool
	ch      chan frame
	check   orderCheck
}

func backoff(spins int) {
	if spins >= harnessSpins {
		runtime.Gosched()
	}
}

func (h *harness) consumerLoop() {
	var seen uint64
	for {
		var gen uint64
		for spins := 0; ; spins++ {
			if gen = atomic.LoadUint64(&h.generation); gen != seen {
				break
			}
			backoff(spins)
		}
		seen = gen
		if h.stop {
			return
		}
		atomic.StoreUint64(&h.ready, gen)
		for spins := 0; atomic.LoadUint64(&h.goSignal) != gen; spins++ {
			backoff(spins)
		}
		start := time.Now()
		ok := h.consume(h.count)
		h.elapsed = int64(time.Since(start))
		h.ok = ok
		atomic.StoreUint64(&h.done, gen)
	}
}

func (h *harness) consume(n uint64) bool {
	ch := h.ch
	c := &h.check
	c.begin(n)
	for i := uint64(0); i < n; i++ {
		c.check(<-ch)
	}
	return c.ok()
}

func (h *harness) produce(n uint64, fault bool) {
	ch := h.ch
	for i := uint64(0); i < n; i++ {
		id := i
		if fault && n > 1 && i < 2 {
			id = 1 - i // swap messages 0 and 1
		}
		ch <- frame{kind: kind, length: 0, id: id}
	}
}

// iterate runs one iteration; it returns the consumer's time in nanoseconds, or -1 if the check failed.
func (h *harness) iterate(n uint64, fault bool) int64 {
	h.count = n
	gen := atomic.LoadUint64(&h.generation) + 1
	atomic.StoreUint64(&h.generation, gen)
	for spins := 0; atomic.LoadUint64(&h.ready) != gen; spins++ {
		backoff(spins)
	}
	atomic.StoreUint64(&h.goSignal, gen)
	h.produce(n, fault)
	for spins := 0; atomic.LoadUint64(&h.done) != gen; spins++ {
		backoff(spins)
	}
	if !h.ok {
		return -1
	}
	return h.elapsed
}

func (h *harness) close() {
	h.stop = true
	atomic.StoreUint64(&h.generation, atomic.LoadUint64(&h.generation)+1)
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []int64, p float64) int64 {
	rank := int(p/100*float64(len(sorted)) + 0.999999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

func msgsLabel(n uint64) string {
	if n%1000 == 0 {
		return strconv.FormatUint(n/1000, 10) + "k"
	}
	return strconv.FormatUint(n, 10)
}

type result struct {
	Name           string  `json:"name"`
	Description    string  `json:"description"`
	Toolchain      string  `json:"toolchain"`
	Library        string  `json:"library"`
	Msgs           uint64  `json:"msgs"`
	Capacity       uint64  `json:"capacity"`
	Warmup         uint64  `json:"warmup"`
	Iterations     uint64  `json:"iterations"`
	MedianNanos    int64   `json:"medianNanos"`
	P95Nanos       int64   `json:"p95Nanos"`
	P99Nanos       int64   `json:"p99Nanos"`
	IterationNanos []int64 `json:"iterationNanos"`
}

func main() {
	fs := flag.NewFlagSet("go-chan", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "short run: --warmup 500 --iterations 1000 unless given")
	msgs := fs.Uint64("msgs", 1000, "messages per iteration (10000 is the microbenchmark size)")
	capacity := fs.Uint64("capacity", 1024, "buffered channel capacity")
	warmup := fs.Int64("warmup", -1, "warm-up iterations (default 2000, --quick 500)")
	iterations := fs.Int64("iterations", -1, "measured iterations (default 8000, --quick 1000)")
	fault := fs.Bool("fault", false, "swap messages 0 and 1 of the first iteration (the check must fail)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() > 0 || *msgs < 1 || *capacity < 1 || *iterations == 0 || *iterations < -1 || *warmup < -1 {
		fmt.Fprintln(os.Stderr, "bad arguments: msgs and capacity >= 1, iterations >= 1, warmup >= 0")
		os.Exit(2)
	}
	if *warmup < 0 {
		*warmup = 2000
		if *quick {
			*warmup = 500
		}
	}
	if *iterations < 0 {
		*iterations = 8000
		if *quick {
			*iterations = 1000
		}
	}
	runtime.GOMAXPROCS(2)

	h := &harness{ch: make(chan frame, *capacity)}
	go h.consumerLoop()
	rounds := *warmup + *iterations
	step := rounds / 10
	if step < 1 {
		step = 1
	}
	nanos := make([]int64, 0, *iterations)
	for r := int64(0); r < rounds; r++ {
		t := h.iterate(*msgs, *fault && r == 0)
		if t < 0 {
			c := h.check
			fmt.Fprintf(os.Stderr, "check failed: %s iteration %d: received=%d, expected=%d, firstMismatch: index=%d value=%d\n",
				name, r, c.received, c.expected, c.firstBadIndex, c.firstBadValue)
			os.Exit(1)
		}
		if r >= *warmup {
			nanos = append(nanos, t)
		}
		if (r+1)%step == 0 {
			fmt.Fprintf(os.Stderr, "[go-chan] %d/%d rounds\n", r+1, rounds)
		}
	}
	h.close()

	sorted := append([]int64(nil), nanos...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	res := result{
		Name: name, Description: description,
		Toolchain: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + " (gc), GOMAXPROCS=2",
		Library:   "Go standard library (chan)",
		Msgs:      *msgs, Capacity: *capacity, Warmup: uint64(*warmup), Iterations: uint64(*iterations),
		MedianNanos: percentile(sorted, 50), P95Nanos: percentile(sorted, 95), P99Nanos: percentile(sorted, 99),
		IterationNanos: nanos,
	}
	column := len(name) + 3
	if column < 32 {
		column = 32
	}
	fmt.Printf("%-*smedian=%10.3f ms  p95=%10.3f ms  p99=%10.3f ms  (%s msgs/iter)\n", column, name,
		float64(res.MedianNanos)/1e6, float64(res.P95Nanos)/1e6, float64(res.P99Nanos)/1e6, msgsLabel(*msgs))
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(strings.TrimSpace(string(line)))
}

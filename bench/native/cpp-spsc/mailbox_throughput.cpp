// cpp_spsc_*_mailbox_throughput: the reference page's "C++ SPSC lock-free ring" rows, run with exactly the
// workload and protocol of the Java CLI (bench/src/main/java/dev/mighty/mailbox/bench/cli):
//
//   - one producer thread (main) and one consumer thread, both alive for the whole run;
//   - a bounded ring of --capacity slots (default 1024) carrying a 16-byte frame descriptor by value
//     (kind u32 = 7, length u32 = 0, id u64 = index);
//   - --msgs messages per iteration (default 1000; 10000 is the microbenchmark size), --warmup iterations
//     (default 2000) then --iterations measured iterations (default 8000) per row; --quick = 500 / 1000;
//   - the rows interleaved round-robin (boost, ring, boost, ring, ...), as the CLI interleaves its rows;
//   - per iteration, the CLI's handshake: the producer publishes the job, waits until the consumer is ready,
//     gives the start signal and produces; the consumer times itself from the start signal to its last
//     message and checks that it received exactly 0 .. n-1, in order (a failed check exits with status 1);
//   - waits: a full or empty ring is polled 100 times with a pause, then with yield (the CLI's
//     Workload.idle); the handshake spins 1000 times, then yields (the CLI's TwoThreadHarness).
//
// Rows:
//   cpp_spsc_boost_mailbox_throughput  boost::lockfree::spsc_queue<Frame> (runtime capacity): push / pop,
//                                      what a C++ user would pick;
//   cpp_spsc_ring_mailbox_throughput   a hand-written cached-index SPSC ring (Lamport ring whose producer
//                                      caches the consumer's index and vice versa): the practical limit.
//
// Output (stdout): the reference lines, then one JSON object per row on one line (the CLI's --native reads
// them). Progress and failures go to stderr. --fault swaps messages 0 and 1 of the first iteration: the check
// must then fail (the smoke test's proof that the check runs).
//
// Build: g++ -O2 -std=c++17 -pthread mailbox_throughput.cpp (bench/native/run.sh does it).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/lockfree/spsc_queue.hpp>
#include <boost/version.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#else
static inline void cpu_relax() {}
#endif

namespace {

constexpr int kChannelSpins = 100;   // Workload.SPINS
constexpr int kHarnessSpins = 1000;  // TwoThreadHarness.SPINS
constexpr uint32_t kKind = 7;
constexpr size_t kCacheLine = 64;

struct Frame {
    uint32_t kind;
    uint32_t length;
    uint64_t id;
};
static_assert(sizeof(Frame) == 16, "the frame descriptor is 16 bytes");

// Workload.idle: spin with a pause, then give the core away.
inline int idle(int spins) {
    if (spins < kChannelSpins) {
        cpu_relax();
    } else {
        std::this_thread::yield();
    }
    return spins + 1;
}

inline void harness_backoff(int spins) {
    if (spins < kHarnessSpins) {
        cpu_relax();
    } else {
        std::this_thread::yield();
    }
}

// The CLI's OrderCheck: counts one iteration's messages and remembers the first one out of place.
struct OrderCheck {
    uint64_t received = 0;
    uint64_t expected = 0;
    int64_t first_bad_index = -1;
    uint64_t first_bad_value = 0;

    void begin(uint64_t n) {
        received = 0;
        expected = n;
        first_bad_index = -1;
    }
    void check(const Frame& f) {
        if ((f.id != received || f.kind != kKind || f.length != 0) && first_bad_index < 0) {
            first_bad_index = static_cast<int64_t>(received);
            first_bad_value = f.id;
        }
        received++;
    }
    bool ok() const { return received == expected && first_bad_index < 0; }
};

// A hand-written SPSC ring: each side owns its index on its own cache line and keeps a cached copy of the
// other side's index, re-reading the shared one only when the cached copy says full (producer) or empty
// (consumer). Release stores of the indexes pair with the other side's acquire loads.
class CachedIndexRing {
  public:
    explicit CachedIndexRing(size_t capacity) {
        size_t c = 1;
        while (c < capacity) c <<= 1;
        capacity_ = c;
        mask_ = c - 1;
        buffer_.reset(new Frame[c]);
    }
    bool push(const Frame& f) {
        const uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_cache_ == capacity_) {
            head_cache_ = head_.load(std::memory_order_acquire);
            if (t - head_cache_ == capacity_) return false;
        }
        buffer_[t & mask_] = f;
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }
    bool pop(Frame& f) {
        const uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_cache_) {
            tail_cache_ = tail_.load(std::memory_order_acquire);
            if (h == tail_cache_) return false;
        }
        f = buffer_[h & mask_];
        head_.store(h + 1, std::memory_order_release);
        return true;
    }

  private:
    alignas(kCacheLine) std::atomic<uint64_t> tail_{0};  // written by the producer
    uint64_t head_cache_ = 0;                              // producer only
    alignas(kCacheLine) std::atomic<uint64_t> head_{0};  // written by the consumer
    uint64_t tail_cache_ = 0;                              // consumer only
    alignas(kCacheLine) size_t capacity_ = 0;
    size_t mask_ = 0;
    std::unique_ptr<Frame[]> buffer_;
    char pad_[kCacheLine];
};

struct Row {
    virtual ~Row() = default;
    virtual const char* name() const = 0;
    virtual const char* description() const = 0;
    virtual std::string library() const = 0;
    virtual void produce(uint64_t n, bool fault) = 0;
    virtual bool consume(uint64_t n) = 0;  // false: the check failed
    OrderCheck check;
    std::vector<int64_t> nanos;
};

template <typename Q>
struct RingRow : Row {
    RingRow(const char* name, const char* description, std::string library, size_t capacity)
        : name_(name), description_(description), library_(std::move(library)), queue_(capacity) {}
    const char* name() const override { return name_; }
    std::string library() const override { return library_; }
    const char* description() const override { return description_; }
    void produce(uint64_t n, bool fault) override {
        for (uint64_t i = 0; i < n; i++) {
            uint64_t id = i;
            if (fault && n > 1 && i < 2) id = 1 - i;  // swap messages 0 and 1
            const Frame f{kKind, 0, id};
            for (int spins = 0; !queue_.push(f);) spins = idle(spins);
        }
    }
    bool consume(uint64_t n) override {
        check.begin(n);
        Frame f;
        for (uint64_t i = 0; i < n; i++) {
            for (int spins = 0; !queue_.pop(f);) spins = idle(spins);
            check.check(f);
        }
        return check.ok();
    }
    const char* name_;
    const char* description_;
    std::string library_;
    Q queue_;
};

// The CLI's TwoThreadHarness, reduced to iterations: one job at a time, in handshakes.
class Harness {
  public:
    Harness() : consumer_([this] { consumer_loop(); }) {}
    ~Harness() {
        op_ = kStop;
        generation_.store(generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        consumer_.join();
    }
    // Producer thread: one iteration of `row`; returns the consumer's time, or -1 if the check failed.
    int64_t iterate(Row* row, uint64_t n, bool fault) {
        row_ = row;
        count_ = n;
        const uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
        op_ = kIterate;
        generation_.store(gen, std::memory_order_release);
        for (int spins = 0; ready_.load(std::memory_order_acquire) != gen; spins++) harness_backoff(spins);
        go_.store(gen, std::memory_order_release);
        row->produce(n, fault);
        for (int spins = 0; done_.load(std::memory_order_acquire) != gen; spins++) harness_backoff(spins);
        return ok_ ? elapsed_ : -1;
    }

  private:
    enum Op { kIterate = 1, kStop = 2 };
    void consumer_loop() {
        uint64_t seen = 0;
        for (;;) {
            uint64_t gen;
            for (int spins = 0; (gen = generation_.load(std::memory_order_acquire)) == seen; spins++) {
                harness_backoff(spins);
            }
            seen = gen;
            if (op_ == kStop) return;
            ready_.store(gen, std::memory_order_release);
            for (int spins = 0; go_.load(std::memory_order_acquire) != gen; spins++) harness_backoff(spins);
            const auto start = std::chrono::steady_clock::now();
            const bool ok = row_->consume(count_);
            const auto end = std::chrono::steady_clock::now();
            elapsed_ = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
            ok_ = ok;
            done_.store(gen, std::memory_order_release);
        }
    }

    // the job: written by the producer before the release store of generation_
    int op_ = 0;
    Row* row_ = nullptr;
    uint64_t count_ = 0;
    // the result: written by the consumer before the release store of done_
    int64_t elapsed_ = 0;
    bool ok_ = true;
    alignas(kCacheLine) std::atomic<uint64_t> generation_{0};
    alignas(kCacheLine) std::atomic<uint64_t> ready_{0};
    alignas(kCacheLine) std::atomic<uint64_t> go_{0};
    alignas(kCacheLine) std::atomic<uint64_t> done_{0};
    alignas(kCacheLine) std::thread consumer_;
};

int64_t percentile(const std::vector<int64_t>& sorted, double p) {
    size_t rank = static_cast<size_t>(p / 100.0 * sorted.size() + 0.999999999);  // nearest rank
    if (rank < 1) rank = 1;
    if (rank > sorted.size()) rank = sorted.size();
    return sorted[rank - 1];
}

std::string msgs_label(uint64_t n) {
    return n % 1000 == 0 ? std::to_string(n / 1000) + "k" : std::to_string(n);
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "%s\nusage: cpp-spsc [--quick] [--msgs N] [--capacity N] [--warmup N] [--iterations N] [--fault]\n",
                 why);
    std::exit(2);
}

uint64_t parse(const char* option, const char* value, uint64_t min) {
    if (value == nullptr) usage((std::string(option) + ": missing value").c_str());
    char* end = nullptr;
    const unsigned long long v = std::strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0' || *value == '-' || v < min) {
        usage((std::string(option) + ": " + value + " (expected: an integer >= " + std::to_string(min) + ")").c_str());
    }
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t msgs = 1000, capacity = 1024;
    int64_t warmup = -1, iterations = -1;
    bool quick = false, fault = false;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--quick") quick = true;
        else if (a == "--fault") fault = true;
        else if (a == "--msgs") msgs = parse("--msgs", v, 1), i++;
        else if (a == "--capacity") capacity = parse("--capacity", v, 1), i++;
        else if (a == "--warmup") warmup = static_cast<int64_t>(parse("--warmup", v, 0)), i++;
        else if (a == "--iterations") iterations = static_cast<int64_t>(parse("--iterations", v, 1)), i++;
        else usage(("unknown option: " + a).c_str());
    }
    if (warmup < 0) warmup = quick ? 500 : 2000;
    if (iterations < 0) iterations = quick ? 1000 : 8000;

    char compiler[128];
    std::snprintf(compiler, sizeof compiler, "g++ %s -O2 -std=c++17", __VERSION__);
    const std::string boost_version = std::to_string(BOOST_VERSION / 100000) + "." +
                                      std::to_string(BOOST_VERSION / 100 % 1000) + "." +
                                      std::to_string(BOOST_VERSION % 100);

    std::vector<std::unique_ptr<Row>> rows;
    rows.emplace_back(new RingRow<boost::lockfree::spsc_queue<Frame>>(
        "cpp_spsc_boost_mailbox_throughput",
        "C++ boost::lockfree::spsc_queue<16 B frame>(capacity): push / pop, busy (spin, then yield); threads",
        "boost " + boost_version + " lockfree::spsc_queue", capacity));
    rows.emplace_back(new RingRow<CachedIndexRing>(
        "cpp_spsc_ring_mailbox_throughput",
        "C++ hand-written cached-index SPSC ring of 16 B frames: push / pop, busy (spin, then yield); threads",
        "no library (the ring is in this file)", capacity));

    {
        Harness harness;
        const int64_t rounds = warmup + iterations;
        const int64_t step = std::max<int64_t>(1, rounds / 10);
        for (int64_t r = 0; r < rounds; r++) {
            for (auto& row : rows) {
                const int64_t nanos = harness.iterate(row.get(), msgs, fault && r == 0);
                if (nanos < 0) {
                    const OrderCheck& c = row->check;
                    std::fprintf(stderr,
                                 "check failed: %s iteration %" PRId64 ": received=%" PRIu64 ", expected=%" PRIu64
                                 ", firstMismatch: index=%" PRId64 " value=%" PRIu64 "\n",
                                 row->name(), r, c.received, c.expected, c.first_bad_index, c.first_bad_value);
                    return 1;
                }
                if (r >= warmup) row->nanos.push_back(nanos);
            }
            if ((r + 1) % step == 0) {
                std::fprintf(stderr, "[cpp-spsc] %" PRId64 "/%" PRId64 " rounds\n", r + 1, rounds);
            }
        }
    }

    size_t longest = 0;
    for (auto& row : rows) longest = std::max(longest, std::strlen(row->name()));
    const int column = static_cast<int>(std::max<size_t>(32, longest + 3));
    for (auto& row : rows) {
        std::vector<int64_t> sorted = row->nanos;
        std::sort(sorted.begin(), sorted.end());
        std::printf("%-*smedian=%10.3f ms  p95=%10.3f ms  p99=%10.3f ms  (%s msgs/iter)\n", column, row->name(),
                    percentile(sorted, 50) / 1e6, percentile(sorted, 95) / 1e6, percentile(sorted, 99) / 1e6,
                    msgs_label(msgs).c_str());
    }
    for (auto& row : rows) {
        std::vector<int64_t> sorted = row->nanos;
        std::sort(sorted.begin(), sorted.end());
        std::string line = "{\"name\": " + json_string(row->name()) +
                           ", \"description\": " + json_string(row->description()) +
                           ", \"toolchain\": " + json_string(compiler) + ", \"library\": " + json_string(row->library()) +
                           ", \"msgs\": " + std::to_string(msgs) + ", \"capacity\": " + std::to_string(capacity) +
                           ", \"warmup\": " + std::to_string(warmup) +
                           ", \"iterations\": " + std::to_string(iterations) +
                           ", \"medianNanos\": " + std::to_string(percentile(sorted, 50)) +
                           ", \"p95Nanos\": " + std::to_string(percentile(sorted, 95)) +
                           ", \"p99Nanos\": " + std::to_string(percentile(sorted, 99)) + ", \"iterationNanos\": [";
        for (size_t i = 0; i < row->nanos.size(); i++) {
            if (i > 0) line += ", ";
            line += std::to_string(row->nanos[i]);
        }
        line += "]}";
        std::printf("%s\n", line.c_str());
    }
    return 0;
}

// parallax bench-collectives: a collectives benchmark in the style of nccl-tests. For each
// collective and each size, the time of one call (median over iterations of the slowest rank),
// the algorithm bandwidth algbw = size / time and the bus bandwidth busbw (algbw times the ring
// factor, comparable across world sizes: all_reduce 2(n-1)/n; all_gather, reduce_scatter and
// all_to_all (n-1)/n; broadcast 1). "size" is nccl-tests' size: the all_reduce and broadcast
// buffer, the all_gather output, the reduce_scatter input, the all_to_all input.
//
// First it measures memcpy of 16 MiB in the same run, counted like busbw: bytes copied per
// second (a copy of S bytes counts S, not the 2S read and written), once on one thread and
// once on every rank's thread at the same time. The last line compares all_reduce's busbw
// at 16 MiB with the larger of the two.
//
// Run: build/parallax bench-collectives --world-size 2 --min-bytes 8 --max-bytes 256M
// Under mpirun the same command runs on the mpi backend (launch() picks it), one rank per
// process, the world size being mpirun's unless --world-size says otherwise; rank 0 prints:
//      mpirun -np 2 build/parallax bench-collectives --min-bytes 8 --max-bytes 256M

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "option_checks.h"
#include "parallax/core/dtype.h"
#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"
#include "statistics.h"

namespace px::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMemcpyBytes = int64_t{16} << 20;
const std::vector<std::string> kCollectives = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"};

struct Options {
  int world_size = 2;
  bool world_size_given = false;
  int64_t min_bytes = 8;
  int64_t max_bytes = int64_t{256} << 20;
  int64_t factor = 2;
  int iters = 20;
  int warmup = 5;
  std::string collective = "all";
  DType dtype = DType::Float32;
  ReduceOp op = ReduceOp::Sum;
  dist::Backend backend = dist::Backend::Auto;
};

// The parsed options, and the text of those that CLI11 checks and the parse callback converts.
struct BenchArguments {
  Options options;
  std::string min_bytes = "8", max_bytes = "256M", dtype = "float32", op = "sum", backend = "auto";
};

// "256M" -> 268435456: a count of bytes with an optional K, M or G suffix (powers of 1024).
int64_t parse_bytes(const std::string& text) {
  const ValueError bad("bad size '" + text + "' (use a non-negative number with an optional K, M or G suffix)");
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    throw bad;
  }
  const std::string suffix = text.substr(used);
  int shift = 0;
  if (suffix == "K" || suffix == "KiB")
    shift = 10;
  else if (suffix == "M" || suffix == "MiB")
    shift = 20;
  else if (suffix == "G" || suffix == "GiB")
    shift = 30;
  else if (!suffix.empty() && suffix != "B")
    throw bad;
  if (value < 0 || value > (std::numeric_limits<int64_t>::max() >> shift)) throw bad;
  return value << shift;
}

DType parse_dtype_name(const std::string& name) {
  if (name == "float32" || name == "float") return DType::Float32;
  if (name == "float64" || name == "double") return DType::Float64;
  if (name == "bfloat16") return DType::BFloat16;
  if (name == "int64") return DType::Int64;
  try {
    return parse_dtype(name);  // f32, f64, bf16, i64, bool
  } catch (const ValueError&) {
    throw ValueError("bad dtype '" + name + "' (float32, float64, bfloat16, int64, bool, f32, f64, bf16 or i64)");
  }
}

ReduceOp parse_op(const std::string& name) {
  if (name == "avg") return ReduceOp::Avg;
  if (name == "max") return ReduceOp::Max;
  if (name == "min") return ReduceOp::Min;
  return ReduceOp::Sum;  // CLI11 let only sum, avg, max and min through
}

dist::Backend parse_backend(const std::string& name) {
  if (name == "threads") return dist::Backend::Threads;
  if (name == "mpi") return dist::Backend::Mpi;
  return dist::Backend::Auto;
}

// A CLI11 check from a parser that throws: a bad value is a usage error naming it.
template <class Parse>
CLI::Validator parsed_by(Parse parse, const std::string& description) {
  return CLI::Validator(
      [parse](const std::string& text) {
        try {
          parse(text);
          return std::string();
        } catch (const std::exception& error) {
          return std::string(error.what());
        }
      },
      description);
}

// Per iteration, the slowest rank's time (an all_reduce max, so that it works with ranks in
// other processes); then the median over iterations (seconds). The same on every rank.
double slowest_rank_median(dist::ProcessGroup& group, const std::vector<double>& seconds) {
  Tensor slowest = Tensor::from_vector(seconds, {static_cast<int64_t>(seconds.size())}, DType::Float64);
  group.all_reduce(slowest, ReduceOp::Max);
  const double* values = slowest.data<double>();
  return median(std::vector<double>(values, values + slowest.numel()));
}

// The world size to ask launch() for: under mpirun, mpirun's (0) unless --world-size was given.
int launch_size(const Options& options) {
  if (dist::resolve_backend(options.backend) == dist::Backend::Mpi && !options.world_size_given) return 0;
  return options.world_size;
}

Tensor filled(int64_t numel, DType dtype) {
  Tensor tensor = Tensor::empty({numel}, dtype);
  // Zero bytes are a valid value of every dtype; writing them also maps the pages.
  std::memset(tensor.raw_data(), 0, static_cast<size_t>(numel * dtype_size(dtype)));
  return tensor;
}

double bus_factor(const std::string& collective, int n) {
  if (collective == "all_reduce") return 2.0 * (n - 1) / n;
  if (collective == "broadcast") return 1.0;
  return static_cast<double>(n - 1) / n;
}

// One call of `collective` on buffers for nccl-tests' `count` (elements of the size column).
struct Buffers {
  Tensor input;
  Tensor output;
};

Buffers make_buffers(const std::string& collective, int64_t count, int n, DType dtype) {
  if (collective == "all_gather") return {filled(count / n, dtype), filled(count, dtype)};
  if (collective == "reduce_scatter") return {filled(count, dtype), filled(count / n, dtype)};
  if (collective == "all_to_all") return {filled(count, dtype), filled(count, dtype)};
  Tensor buffer = filled(count, dtype);
  return {buffer, buffer};
}

void run_once(const std::string& collective, dist::ProcessGroup& group, const Buffers& buffers, ReduceOp op) {
  if (collective == "all_reduce")
    group.all_reduce(buffers.input, op);
  else if (collective == "all_gather")
    group.all_gather(buffers.input, buffers.output);
  else if (collective == "reduce_scatter")
    group.reduce_scatter(buffers.input, buffers.output, op);
  else if (collective == "all_to_all")
    group.all_to_all(buffers.input, buffers.output);
  else
    group.broadcast(buffers.input, 0);
}

struct Row {
  int64_t bytes = 0;
  int64_t count = 0;
  double seconds = 0;
};

std::vector<int64_t> sizes_for(const Options& options, const std::string& collective, int n) {
  const int64_t element = dtype_size(options.dtype);
  const bool divided = collective != "all_reduce" && collective != "broadcast";
  std::vector<int64_t> counts;
  for (int64_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= options.factor) {
    int64_t count = bytes / element;
    if (divided) count = count / n * n;  // as nccl-tests: whole elements per rank
    if (count > 0 && (counts.empty() || counts.back() != count)) counts.push_back(count);
    if (bytes > options.max_bytes / options.factor) break;  // the next size would overflow or pass the end
  }
  return counts;
}

// New threads often start on one core and wait there for the scheduler to spread them out:
// collectives for a while first, so that the smallest sizes are not timed on a shared core.
void settle(dist::ProcessGroup& group) {
  const auto until = Clock::now() + std::chrono::milliseconds(50);
  for (bool go = true; go;) {
    Tensor flag = Tensor::scalar(Clock::now() < until ? 1.0 : 0.0, DType::Int64);
    group.all_reduce(flag, ReduceOp::Min);  // every rank stops after the same round
    go = flag.item<int64_t>() != 0;
  }
}

// Times every size of one collective in one launch (no thread start-up per size). Filled in
// by rank 0 (under mpirun: in rank 0's process only).
std::vector<Row> measure(const Options& options, int n, const std::string& collective,
                         const std::vector<int64_t>& counts) {
  std::vector<double> seconds(counts.size(), 0.0);
  dist::launch(launch_size(options),
               [&](int rank, dist::ProcessGroup& group) {
                 settle(group);
                 for (size_t s = 0; s < counts.size(); ++s) {
                   Buffers buffers = make_buffers(collective, counts[s], n, options.dtype);
                   for (int i = 0; i < options.warmup; ++i) run_once(collective, group, buffers, options.op);
                   std::vector<double> mine;
                   for (int i = 0; i < options.iters; ++i) {
                     group.barrier();
                     auto start = Clock::now();
                     run_once(collective, group, buffers, options.op);
                     mine.push_back(std::chrono::duration<double>(Clock::now() - start).count());
                   }
                   const double slowest = slowest_rank_median(group, mine);
                   if (rank == 0) seconds[s] = slowest;
                 }
               },
               {.backend = options.backend});
  std::vector<Row> rows;
  for (size_t s = 0; s < counts.size(); ++s) {
    rows.push_back({counts[s] * dtype_size(options.dtype), counts[s], seconds[s]});
  }
  return rows;
}

void print_rows(const Options& options, int n, const std::string& collective, const std::vector<Row>& rows) {
  const bool reduces = collective == "all_reduce" || collective == "reduce_scatter";
  std::printf("\n# %s, %d ranks\n", collective.c_str(), n);
  std::printf("# %12s %12s %6s %6s %11s %9s %9s\n", "size (B)", "count", "type", "redop", "time (us)", "algbw",
              "busbw");
  for (const Row& row : rows) {
    const double algbw = static_cast<double>(row.bytes) / row.seconds / 1e9;
    std::printf("  %12lld %12lld %6s %6s %11.2f %9.2f %9.2f\n", static_cast<long long>(row.bytes),
                static_cast<long long>(row.count), std::string(dtype_name(options.dtype)).c_str(),
                reduces ? reduce_op_name(options.op).c_str() : "none", row.seconds * 1e6, algbw,
                algbw * bus_factor(collective, n));
  }
}

// Bytes copied per second by one memcpy of 16 MiB on this thread (median of `iters`).
double memcpy_one_thread(int iters) {
  std::vector<char> source(kMemcpyBytes, 1), target(kMemcpyBytes, 0);
  std::vector<double> seconds;
  for (int i = 0; i < iters + 3; ++i) {
    auto start = Clock::now();
    std::memcpy(target.data(), source.data(), kMemcpyBytes);
    if (i >= 3) seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return static_cast<double>(kMemcpyBytes) / median(seconds) / 1e9;
}

// The same on every rank at once: bytes copied per second by each (slowest rank). Also
// reports, through `n` and `prints`, the world size and whether this process is rank 0's.
double memcpy_every_rank(const Options& options, int& n, bool& prints) {
  double seconds = 0;
  dist::launch(launch_size(options),
               [&](int rank, dist::ProcessGroup& group) {
                 std::vector<char> source(kMemcpyBytes, 1), target(kMemcpyBytes, 0);
                 std::vector<double> mine;
                 for (int i = 0; i < options.iters + 3; ++i) {
                   group.barrier();
                   auto start = Clock::now();
                   std::memcpy(target.data(), source.data(), kMemcpyBytes);
                   if (i >= 3) mine.push_back(std::chrono::duration<double>(Clock::now() - start).count());
                 }
                 const double slowest = slowest_rank_median(group, mine);
                 if (rank == 0) {
                   seconds = slowest;
                   n = group.size();
                   prints = true;
                 }
                 if (group.backend() == "mpi") n = group.size();  // one rank per process: every process needs it
               },
               {.backend = options.backend});
  return static_cast<double>(kMemcpyBytes) / seconds / 1e9;
}

int bench(const Options& options) {
  const double copy_one = memcpy_one_thread(std::max(options.iters, 20));
  int n = 0;
  bool prints = false;  // under mpirun, only rank 0's process prints
  const double copy_all = memcpy_every_rank(options, n, prints);
  if (!prints && std::freopen("/dev/null", "w", stdout) == nullptr) return 2;
  std::printf("# parallax bench-collectives: world size %d, backend %s, dtype %s, %d iterations after %d warm-up\n", n,
              dist::backend_name(dist::resolve_backend(options.backend)).c_str(),
              std::string(dtype_name(options.dtype)).c_str(), options.iters, options.warmup);
  std::printf("# time: median over iterations of the slowest rank; GB/s = 1e9 B/s; busbw as nccl-tests\n");
  std::printf("# memcpy 16 MiB, 1 thread: %.2f GB/s copied (%.2f GB/s read + written)\n", copy_one, 2 * copy_one);
  std::printf("# memcpy 16 MiB, on each of %d ranks at once: %.2f GB/s copied per rank (%.2f read + written)\n", n,
              copy_all, 2 * copy_all);

  double all_reduce_16m = -1;
  std::vector<Row> all_reduce_large;  // >= 16 MiB
  for (const std::string& collective : kCollectives) {
    if (options.collective != "all" && options.collective != collective) continue;
    std::vector<Row> rows = measure(options, n, collective, sizes_for(options, collective, n));
    print_rows(options, n, collective, rows);
    for (const Row& row : rows) {
      if (collective != "all_reduce" || row.bytes < kMemcpyBytes) continue;
      if (row.bytes == kMemcpyBytes) all_reduce_16m = row.seconds;
      all_reduce_large.push_back(row);
    }
  }
  if (all_reduce_16m < 0) {  // not in the sweep: measure it alone
    all_reduce_16m = measure(options, n, "all_reduce", {kMemcpyBytes / dtype_size(options.dtype)}).front().seconds;
  }
  auto busbw = [&](double bytes, double seconds) { return bytes / seconds / 1e9 * bus_factor("all_reduce", n); };
  const double reference = std::max(copy_one, copy_all);
  const double at_16m = busbw(static_cast<double>(kMemcpyBytes), all_reduce_16m);
  std::printf("\nmemcpy reference: %.2f GB/s copied (the larger of the two memcpy figures)\n", reference);
  if (!all_reduce_large.empty()) {
    const Row* lowest = &all_reduce_large.front();
    for (const Row& row : all_reduce_large) {
      if (busbw(static_cast<double>(row.bytes), row.seconds) <
          busbw(static_cast<double>(lowest->bytes), lowest->seconds)) {
        lowest = &row;
      }
    }
    const double low = busbw(static_cast<double>(lowest->bytes), lowest->seconds);
    std::printf("lowest all_reduce busbw at >= 16 MiB: %.2f GB/s at %lld B = %.0f%% of memcpy\n", low,
                static_cast<long long>(lowest->bytes), 100.0 * low / reference);
  }
  std::printf("all_reduce busbw at 16 MiB = %.2f GB/s = %.0f%% of memcpy\n", at_16m, 100.0 * at_16m / reference);
  std::fflush(stdout);
  return 0;
}

int run_bench(const BenchArguments& args) {
  try {
    return bench(args.options);
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::cerr << "parallax bench-collectives: " << error.what() << std::endl;
    return 2;
  }
}

}  // namespace

Command add_bench_collectives_command(CLI::App& app) {
  auto args = std::make_shared<BenchArguments>();
  CLI::App* sub = app.add_subcommand(
      "bench-collectives",
      "Benchmark the collectives nccl-tests style (time, algbw, busbw per collective and size, against memcpy): "
      "threads backend, or one rank per process under mpirun (rank 0 prints)");
  CLI::Option* world_size =
      sub->add_option("--world-size", args->options.world_size, "Ranks (default 2; under mpirun, mpirun's)")
          ->check(integer_in_range(1, std::numeric_limits<int>::max()));
  const CLI::Validator bytes = parsed_by(parse_bytes, "BYTES");
  sub->add_option("--min-bytes", args->min_bytes, "Smallest size: bytes, with an optional K, M or G suffix")
      ->check(bytes)
      ->capture_default_str();
  sub->add_option("--max-bytes", args->max_bytes, "Largest size: bytes, with an optional K, M or G suffix")
      ->check(bytes)
      ->capture_default_str();
  sub->add_option("--factor", args->options.factor, "Each size is the previous one times this")
      ->check(integer_in_range(2))
      ->capture_default_str();
  sub->add_option("--iters", args->options.iters, "Timed calls per size")
      ->check(integer_in_range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  sub->add_option("--warmup", args->options.warmup, "Untimed calls per size first")
      ->check(integer_in_range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  std::vector<std::string> collectives{"all"};
  collectives.insert(collectives.end(), kCollectives.begin(), kCollectives.end());
  sub->add_option("--collective", args->options.collective, "The collective to time, or all of them")
      ->check(CLI::IsMember(collectives))
      ->capture_default_str();
  sub->add_option("--dtype", args->dtype, "float32, float64, bfloat16, int64 or bool (or f32, f64, bf16, i64)")
      ->check(parsed_by(parse_dtype_name, "DTYPE"))
      ->capture_default_str();
  sub->add_option("--op", args->op, "Reduction of all_reduce and reduce_scatter: sum, avg, max or min")
      ->check(CLI::IsMember({"sum", "avg", "max", "min"}))
      ->capture_default_str();
  sub->add_option("--backend", args->backend, "auto (mpi under mpirun, else threads), threads or mpi")
      ->check(CLI::IsMember({"auto", "threads", "mpi"}))
      ->capture_default_str();
  // Each option is valid alone (CLI11 checked it); the pair is checked once both are parsed, still
  // a usage error.
  sub->parse_complete_callback([args, world_size] {
    Options& options = args->options;
    options.world_size_given = world_size->count() > 0;
    options.min_bytes = parse_bytes(args->min_bytes);
    options.max_bytes = parse_bytes(args->max_bytes);
    options.dtype = parse_dtype_name(args->dtype);
    options.op = parse_op(args->op);
    options.backend = parse_backend(args->backend);
    if (options.min_bytes < 1 || options.max_bytes < options.min_bytes) {
      throw CLI::ValidationError("--min-bytes/--max-bytes", "need 1 <= --min-bytes (" + args->min_bytes +
                                                                ") <= --max-bytes (" + args->max_bytes + ")");
    }
  });
  return {sub, [args] { return run_bench(*args); }};
}

}  // namespace px::cli

#pragma once
// Intra-op parallelism: Parallax's own kernels (GEMMs included) split their work over the
// ThreadPool that a ParallelScope binds to the calling thread; without one they run on the
// calling thread alone.
//
// Who owns the threads. A pool belongs to whoever runs a rank: dist::launch gives every rank
// one for its lifetime (threads_per_rank threads), a program that runs one rank itself makes
// its own. No pool is global, and a kernel never starts a thread.
//
// Core sharing. A process has available_cores() cores (PARALLAX_NUM_THREADS, else every
// hardware thread). R ranks in one process (thread ranks, or MPI ranks on one machine) get
// max(1, cores / R) threads each, the rank's own thread included, so R ranks never run more
// than max(cores, R) threads. OpenBLAS, whose thread count is one process-wide setting, is
// set to one thread where pools are made for ranks (dist::launch); a GEMM then splits itself
// over the rank's pool (kernels/gemm.h). Where OpenBLAS was left multi-threaded, GEMMs are
// left to OpenBLAS's own threads instead of being split twice.
//
// Determinism. parallel_for cuts [0, n) into chunks whose boundaries depend only on n and the
// grain, never on the pool or its size, and a kernel that reduces across chunks combines the
// chunks' partial results in chunk order. So the same inputs give the same bits with any
// number of threads, or with no pool at all.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace px {

class ThreadPool {
 public:
  // `threads` counts the calling thread: a pool of 1 has no workers and runs everything
  // inline. ValueError for threads < 1.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(i) for every i in [0, tasks) on the workers and the calling thread and returns
  // when all have finished. If a task throws, the tasks not yet started are skipped and the
  // first exception is rethrown here. A call made from inside a task (nested parallelism), or
  // while another thread is running a job on this pool, runs its tasks inline, in order.
  void run(int64_t tasks, const std::function<void(int64_t)>& task);

 private:
  void work_loop();
  void take_tasks();

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  uint64_t generation_ = 0;
  size_t checked_out_ = 0;  // workers done with the current job
  bool stop_ = false;
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

// While alive, parallel_for on this thread runs on `pool` (nests: the previous pool comes back
// at its end). A null pool means the calling thread alone.
class ParallelScope {
 public:
  explicit ParallelScope(ThreadPool* pool);
  ~ParallelScope();
  ParallelScope(const ParallelScope&) = delete;
  ParallelScope& operator=(const ParallelScope&) = delete;

  // The innermost scope's pool on this thread, or null.
  static ThreadPool* current();

 private:
  ThreadPool* previous_;
};

// Threads of the current scope's pool (1 without one, or inside one of its tasks).
int current_threads();

// Cores this process may use: PARALLAX_NUM_THREADS when it is a positive integer, else
// std::thread::hardware_concurrency() (at least 1). ValueError for a PARALLAX_NUM_THREADS that
// is set but not a positive integer.
int available_cores();
// The core-sharing rule: max(1, available_cores() / ranks_in_process).
int threads_per_rank(int ranks_in_process);

// The chunks parallel_for cuts [0, n) into: `size` items each (the last one shorter),
// size = max(grain, ceil(n / kMaxChunks)).
struct Chunks {
  static constexpr int64_t kMaxChunks = 64;
  int64_t size = 1;
  int64_t count = 0;
  Chunks(int64_t n, int64_t grain);
};

// About how many elements of a simple pass (a few flops each) make a chunk worth a thread's
// wake-up, and the rows of length `row_length` that hold that many (at least 1).
inline constexpr int64_t kGrainElements = int64_t{1} << 15;
inline int64_t rows_per_chunk(int64_t row_length) {
  return row_length >= kGrainElements ? 1 : kGrainElements / (row_length < 1 ? 1 : row_length);
}

// Calls body(begin, end) for every chunk of [0, n) (see Chunks), on the current scope's pool
// when there is more than one chunk, else inline.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace px

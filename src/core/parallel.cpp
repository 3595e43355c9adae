#include "parallax/core/parallel.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "parallax/core/error.h"

namespace px {

namespace {

thread_local ThreadPool* current_pool = nullptr;
// Set while this thread runs tasks of a pool's job: a parallel_for inside them runs inline.
thread_local bool inside_task = false;

class InsideTask {
 public:
  InsideTask() : previous_(inside_task) { inside_task = true; }
  ~InsideTask() { inside_task = previous_; }
  InsideTask(const InsideTask&) = delete;
  InsideTask& operator=(const InsideTask&) = delete;

 private:
  bool previous_;
};

void run_inline(int64_t tasks, const std::function<void(int64_t)>& task) {
  for (int64_t i = 0; i < tasks; ++i) task(i);
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) throw ValueError("ThreadPool: threads = " + std::to_string(threads) + " (must be >= 1)");
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run(int64_t tasks, const std::function<void(int64_t)>& task) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1 || inside_task) return run_inline(tasks, task);
  std::unique_lock<std::mutex> job(run_mutex_, std::try_to_lock);
  if (!job.owns_lock()) return run_inline(tasks, task);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    tasks_ = tasks;
    next_.store(0, std::memory_order_relaxed);
    failed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    checked_out_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  take_tasks();
  std::exception_ptr error;
  {
    // Every worker checks out of the job before it ends, so none can still be reading task_
    // when the caller's function object goes away.
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return checked_out_ == workers_.size(); });
    task_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::work_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    take_tasks();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (++checked_out_ == workers_.size()) finished_.notify_one();
    }
  }
}

void ThreadPool::take_tasks() {
  InsideTask inside;
  for (;;) {
    int64_t i = next_.fetch_add(1, std::memory_order_relaxed);
    if (i >= tasks_) return;
    if (failed_.load(std::memory_order_relaxed)) continue;
    try {
      (*task_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
}

ParallelScope::ParallelScope(ThreadPool* pool) : previous_(current_pool) { current_pool = pool; }

ParallelScope::~ParallelScope() { current_pool = previous_; }

ThreadPool* ParallelScope::current() { return current_pool; }

int current_threads() { return current_pool && !inside_task ? current_pool->threads() : 1; }

int available_cores() {
  if (const char* value = std::getenv("PARALLAX_NUM_THREADS"); value && *value) {
    char* end = nullptr;
    long parsed = std::strtol(value, &end, 10);
    if (*end != '\0' || parsed < 1 || parsed > 4096) {
      throw ValueError(std::string("PARALLAX_NUM_THREADS = \"") + value +
                       "\" is not a positive integer (at most 4096)");
    }
    return static_cast<int>(parsed);
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

int threads_per_rank(int ranks_in_process) { return std::max(1, available_cores() / std::max(1, ranks_in_process)); }

Chunks::Chunks(int64_t n, int64_t grain) {
  if (n <= 0) return;
  size = std::max<int64_t>({grain, 1, (n + kMaxChunks - 1) / kMaxChunks});
  count = (n + size - 1) / size;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body) {
  const Chunks chunks(n, grain);
  auto chunk = [&](int64_t c) { body(c * chunks.size, std::min(n, (c + 1) * chunks.size)); };
  if (chunks.count > 1 && current_pool) return current_pool->run(chunks.count, chunk);
  run_inline(chunks.count, chunk);
}

}  // namespace px

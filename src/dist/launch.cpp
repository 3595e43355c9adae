#include <algorithm>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dist/collective_checks.h"
#include "dist/mpi_process_group.h"
#include "dist/threads_process_group.h"
#include "dist/threads_world.h"
#include "parallax/core/error.h"
#include "parallax/core/parallel.h"
#include "parallax/dist/process_group.h"
#include "parallax/kernels/blas_threads.h"

namespace px::dist {
namespace {

void launch_threads(int world_size, const std::function<void(int rank, ProcessGroup& group)>& fn) {
  if (world_size < 1) {
    throw ValueError("launch: world_size must be at least 1 for the threads backend, got " +
                     std::to_string(world_size));
  }
  auto world = std::make_shared<threads::World>(world_size);
  std::vector<int> ranks(static_cast<size_t>(world_size));
  std::iota(ranks.begin(), ranks.end(), 0);
  auto state = std::make_shared<threads::GroupState>(world, std::move(ranks));
  world->register_group(state);
  std::vector<std::unique_ptr<threads::ThreadsProcessGroup>> groups;
  for (int r = 0; r < world_size; ++r) groups.push_back(std::make_unique<threads::ThreadsProcessGroup>(state, r));

  auto run_rank = [&](int rank) {
    try {
      fn(rank, *groups[static_cast<size_t>(rank)]);
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      world->fail(rank, threads::describe_exception(error), error);
    }
    world->mark_finished(rank);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    try {
      threads.emplace_back(run_rank, r);
    } catch (...) {
      std::exception_ptr error = std::current_exception();
      world->fail(r, "its thread could not be started: " + threads::describe_exception(error), error);
      break;
    }
  }
  for (std::thread& thread : threads) thread.join();
  if (world->failed()) std::rethrow_exception(world->failure_error());
}

}  // namespace

std::string backend_name(Backend backend) {
  switch (backend) {
    case Backend::Auto:
      return "auto";
    case Backend::Threads:
      return "threads";
    case Backend::Mpi:
      return "mpi";
  }
  return "unknown";
}

// The one place that picks a backend.
Backend resolve_backend(Backend requested) {
  if (requested != Backend::Auto) return requested;
  if (const char* forced = std::getenv("PARALLAX_BACKEND"); forced != nullptr && *forced != '\0') {
    const std::string_view name(forced);
    if (name == "threads") return Backend::Threads;
    if (name == "mpi") return Backend::Mpi;
    throw ValueError("PARALLAX_BACKEND=" + std::string(name) + ": expected \"threads\" or \"mpi\"");
  }
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ? Backend::Mpi : Backend::Threads;
}

int ranks_on_this_machine(Backend backend, int world_size) {
  if (backend == Backend::Threads) return world_size;
  // Open MPI says how many ranks of the job share this node.
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int parsed = local != nullptr ? std::atoi(local) : 0;
  return parsed > 0 ? parsed : 1;
}

void launch(int world_size, const std::function<void(int rank, ProcessGroup& group)>& fn, LaunchOptions options) {
  const Backend backend = resolve_backend(options.backend);
  if (options.threads_per_rank < 0) {
    throw ValueError("launch: threads_per_rank must be >= 0 (0: the core-sharing rule), got " +
                     std::to_string(options.threads_per_rank));
  }
  // The core-sharing rule (core/parallel.h): each rank runs its kernels on its own pool, and
  // OpenBLAS runs single-threaded inside them for the launch.
  const int threads = options.threads_per_rank > 0
                          ? options.threads_per_rank
                          : threads_per_rank(ranks_on_this_machine(backend, std::max(world_size, 1)));
  struct BlasThreads {
    int previous = kernels::blas_threads();
    BlasThreads() { kernels::set_blas_threads(1); }
    ~BlasThreads() { kernels::set_blas_threads(previous); }
  } single_threaded_blas;
  auto with_pool = [&](int rank, ProcessGroup& group) {
    ThreadPool pool(threads);
    ParallelScope scope(&pool);
    fn(rank, group);
  };
  switch (backend) {
    case Backend::Threads:
      return launch_threads(world_size, with_pool);
    case Backend::Mpi:
      return mpi::launch_mpi(world_size, with_pool);
    case Backend::Auto:
      break;
  }
  PX_ASSERT(false && "resolve_backend never returns Auto");
}

}  // namespace px::dist

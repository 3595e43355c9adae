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
#include "parallax/dist/process_group.h"

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

void launch(int world_size, const std::function<void(int rank, ProcessGroup& group)>& fn, LaunchOptions options) {
  const Backend backend = resolve_backend(options.backend);
  switch (backend) {
    case Backend::Threads:
      return launch_threads(world_size, fn);
    case Backend::Mpi:
      return mpi::launch_mpi(world_size, fn);
    case Backend::Auto:
      break;
  }
  PX_ASSERT(false && "resolve_backend never returns Auto");
}

}  // namespace px::dist

// Failures and bad calls on the threads backend: a rank that throws or aborts fails every
// other rank's pending and later collectives promptly with CommError; bad arguments are
// ValueErrors on the ranks that pass them; launch() rethrows the first failure.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/collectives_test_util.h"
#include "parallax/core/error.h"
#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"
#include "support/test_util.h"

namespace px::dist {
namespace {

using px::testing::expect_value_error;
using px::testing::launch_with_watchdog;

// A user exception that is not a px::Error, so that launch() must keep its type.
struct Boom : std::exception {
  explicit Boom(std::string text) : text(std::move(text)) {}
  const char* what() const noexcept override { return text.c_str(); }
  std::string text;
};

Tensor ones(int64_t n, DType dtype = DType::Float32) {
  return Tensor::from_vector(std::vector<double>(static_cast<size_t>(n), 1.0), {n}, dtype);
}

std::string comm_error(int failed, const std::string& reason, const std::string& what, int rank) {
  return "CommError: rank " + std::to_string(failed) + " failed (" + reason + "); " + what + " on rank " +
         std::to_string(rank) + " cannot complete";
}

// --- failures ---

TEST(Faults, ARankThatThrowsWakesEveryRankWaitingInACollective) {
  const int n = 4;
  std::vector<std::string> messages(n);
  auto start = std::chrono::steady_clock::now();
  try {
    launch_with_watchdog(n, [&](int rank, ProcessGroup& group) {
      if (rank == 2) {
        // Late enough that the others are already waiting.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        throw Boom("boom on rank 2");
      }
      try {
        Tensor tensor = ones(1000);
        group.all_reduce(tensor, ReduceOp::Sum);
      } catch (const CommError& error) {
        messages[static_cast<size_t>(rank)] = error.what();
        throw;
      }
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (const Boom& error) {
    EXPECT_EQ(std::string(error.what()), "boom on rank 2");  // the original, not a CommError
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(messages[static_cast<size_t>(r)], comm_error(2, "boom on rank 2", "all_reduce", r));
  }
}

TEST(Faults, ARankThatThrowsBetweenCollectivesFailsTheNextOne) {
  const int n = 3;
  std::vector<int> failed_at(n, -1);
  std::vector<std::vector<double>> sums(n);
  EXPECT_THROW(launch_with_watchdog(n,
                                    [&](int rank, ProcessGroup& group) {
                                      for (int step = 0; step < 6; ++step) {
                                        if (rank == 1 && step == 3) throw std::runtime_error("tired");
                                        Tensor tensor = ones(64);
                                        try {
                                          group.all_reduce(tensor, ReduceOp::Sum);
                                        } catch (const CommError&) {
                                          failed_at[static_cast<size_t>(rank)] = step;
                                          throw;
                                        }
                                        sums[static_cast<size_t>(rank)].push_back(tensor.to_vector<double>()[0]);
                                      }
                                    }),
               std::runtime_error);
  for (int r : {0, 2}) {
    EXPECT_EQ(failed_at[static_cast<size_t>(r)], 3) << "rank " << r;
    EXPECT_EQ(sums[static_cast<size_t>(r)], (std::vector<double>{3, 3, 3}));
  }
}

TEST(Faults, EveryLaterCallFailsAtOnce) {
  std::vector<int> comm_errors(2, 0);
  EXPECT_THROW(launch_with_watchdog(2,
                                    [&](int rank, ProcessGroup& group) {
                                      if (rank == 1) throw std::runtime_error("gone");
                                      auto count = [&](const std::function<void()>& call) {
                                        try {
                                          call();
                                        } catch (const CommError&) {
                                          ++comm_errors[0];
                                        }
                                      };
                                      Tensor t = ones(4);
                                      Tensor big = ones(8);
                                      count([&] { group.barrier(); });
                                      count([&] { group.all_reduce(t, ReduceOp::Max); });
                                      count([&] { group.broadcast(t, 1); });
                                      count([&] { group.all_gather(t, big); });
                                      count([&] { group.reduce_scatter(big, t, ReduceOp::Sum); });
                                      count([&] { group.all_to_all(big, ones(8)); });
                                      count([&] { group.send(t, 1); });
                                      count([&] { group.recv(t, 1); });
                                      count([&] { group.split({0}); });
                                    }),
               std::runtime_error);
  EXPECT_EQ(comm_errors[0], 9);
}

TEST(Faults, AbortFailsTheJobWithTheReason) {
  std::vector<std::string> messages(3);
  try {
    launch_with_watchdog(3, [&](int rank, ProcessGroup& group) {
      if (rank == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        group.abort("out of patience");
        return;  // returns normally: the abort alone fails the job
      }
      try {
        group.barrier();
      } catch (const CommError& error) {
        messages[static_cast<size_t>(rank)] = error.what();
      }
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (const CommError& error) {
    EXPECT_EQ(std::string(error.what()), "CommError: rank 1 called abort(): out of patience");
  }
  for (int r : {0, 2}) {
    EXPECT_EQ(messages[static_cast<size_t>(r)], comm_error(1, "called abort(): out of patience", "barrier", r));
  }
}

TEST(Faults, LaunchRethrowsTheFirstFailureNotTheWokenRanksErrors) {
  try {
    launch_with_watchdog(3, [&](int rank, ProcessGroup& group) {
      if (rank == 2) throw Boom("first");
      try {
        group.barrier();
      } catch (const CommError&) {
        throw Boom("second, from rank " + std::to_string(rank));
      }
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (const Boom& error) {
    EXPECT_EQ(error.text, "first");
  }
}

TEST(Faults, ExceptionsOfAnyTypeAreRethrown) {
  try {
    launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
      if (rank == 0) throw 42;
      group.barrier();
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (int value) {
    EXPECT_EQ(value, 42);
  }
}

TEST(Faults, ARankThatReturnsEarlyFailsThePendingCollective) {
  try {
    launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
      if (rank == 1) return;  // skips the all_reduce that rank 0 waits in
      Tensor tensor = ones(3);
      group.all_reduce(tensor, ReduceOp::Sum);
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (const CommError& error) {
    EXPECT_EQ(std::string(error.what()),
              "CommError: rank 1 returned from its function first (every rank of a group must call the same "
              "collectives in the same order); all_reduce on rank 0 cannot complete");
  }
}

// Failures while the others are inside big collectives, on more ranks than cores: a rank
// that fails must not release buffers that the others are still reading (ASan checks it).
TEST(Faults, FailingDuringLargeCollectivesReleasesNoBufferInUse) {
  for (int failing_step : {0, 1, 4}) {
    EXPECT_THROW(launch_with_watchdog(8,
                                      [&](int rank, ProcessGroup& group) {
                                        for (int step = 0; step < 6; ++step) {
                                          if (rank == 5 && step == failing_step) throw Boom("late");
                                          Tensor tensor = ones(1 << 16);
                                          group.all_reduce(tensor, ReduceOp::Sum);
                                          Tensor gathered = Tensor::empty({8 << 14});
                                          group.all_gather(ones(1 << 14), gathered);
                                        }
                                      }),
                 Boom);
  }
}

// A rank outside a sub-group fails while the sub-group's ranks are inside the data phase
// of their collectives (reading and writing each other's buffers): the first to notice must
// not return, and so free its buffer, before its peer is done with it (ASan checks it).
TEST(Faults, AFailureOutsideASubGroupReleasesNoBufferInUse) {
  for (int delay_us : {0, 300, 1000, 3000}) {
    EXPECT_THROW(launch_with_watchdog(4,
                                      [&](int rank, ProcessGroup& group) {
                                        auto pairs = group.split({0, 1});
                                        if (rank == 3) {
                                          std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
                                          throw Boom("outsider fails");
                                        }
                                        if (rank == 2) {
                                          group.barrier();  // waits for rank 3
                                          return;
                                        }
                                        for (;;) {
                                          Tensor tensor = ones(1 << 18);
                                          pairs->all_reduce(tensor, ReduceOp::Sum);
                                          Tensor gathered = Tensor::empty({1 << 18});
                                          pairs->all_gather(ones(1 << 17), gathered);
                                        }
                                      }),
                 Boom);
  }
}

// --- bad arguments ---

TEST(BadCalls, LocalErrorsAreValueErrorsOnTheCallingRank) {
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    const std::string r = std::to_string(rank);
    Tensor square = ones(16).view({4, 4});
    expect_value_error([&] { group.all_reduce(square.transpose(0, 1), ReduceOp::Sum); },
                       "all_reduce on rank " + r +
                           ": the tensor must be a dense contiguous tensor; got a non-contiguous f32[4,4] (call "
                           ".contiguous() first)");
    expect_value_error([&] { group.broadcast(Tensor::meta({3}), 0); },
                       "broadcast on rank " + r +
                           ": the tensor must be a dense contiguous tensor; got a meta tensor "
                           "f32[3]");
    expect_value_error(
        [&] { group.all_reduce(Tensor(), ReduceOp::Sum); },
        "all_reduce on rank " + r + ": the tensor must be a dense contiguous tensor; got an undefined tensor");
    expect_value_error(
        [&] { group.all_gather(ones(3), ones(5)); },
        "all_gather on rank " + r + ": the output has 5 elements but must have size() * input elements = 2 * 3 = 6");
    expect_value_error([&] { group.all_gather(ones(3), ones(6, DType::Float64)); },
                       "all_gather on rank " + r +
                           ": the input is f32 but the output is f64 (they must have the same "
                           "dtype)");
    expect_value_error([&] { group.reduce_scatter(ones(5), ones(2), ReduceOp::Sum); },
                       "reduce_scatter on rank " + r +
                           ": the input has 5 elements but must have size() * output elements = 2 * 2 = 4");
    expect_value_error([&] { group.all_to_all(ones(5), ones(5)); },
                       "all_to_all on rank " + r +
                           ": the input has 5 elements and the output 5; both must have the same number, a multiple "
                           "of size() = 2");
    Tensor buffer = ones(8);
    expect_value_error([&] { group.all_to_all(buffer, buffer); },
                       "all_to_all on rank " + r +
                           ": the input and the output overlap; all_to_all needs separate "
                           "buffers");
    expect_value_error([&] { group.all_gather(buffer.narrow(0, 1, 4), buffer); },
                       "all_gather on rank " + r +
                           ": the input overlaps the output; in place, the input must be "
                           "exactly chunk " +
                           r + " of the output");
    expect_value_error([&] { group.reduce_scatter(buffer, buffer.narrow(0, 3, 4), ReduceOp::Sum); },
                       "reduce_scatter on rank " + r +
                           ": the output overlaps the input; in place, the output must be "
                           "exactly chunk " +
                           r + " of the input");
    expect_value_error([&] { group.broadcast(buffer, 2); },
                       "broadcast on rank " + r + ": root 2 is out of range for a group of 2 ranks");
    expect_value_error(
        [&] { group.all_reduce(ones(2, DType::Bool), ReduceOp::Avg); },
        "all_reduce on rank " + r + ": avg is not defined on bool (sum or max give \"any\", min gives \"all\")");
    // No rank entered any of those: the group is in step.
    Tensor tensor = ones(3);
    group.all_reduce(tensor, ReduceOp::Sum);
    EXPECT_EQ(tensor.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  });
}

TEST(BadCalls, AnUncaughtLocalErrorIsACommErrorForTheOthers) {
  std::string seen_by_rank_0;
  try {
    launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
      Tensor tensor = ones(16).view({4, 4});
      if (rank == 1) tensor = tensor.transpose(0, 1);
      try {
        group.all_reduce(tensor, ReduceOp::Sum);
      } catch (const CommError& error) {
        seen_by_rank_0 = error.what();
        throw;
      }
    });
    ADD_FAILURE() << "launch returned normally";
  } catch (const ValueError& error) {
    EXPECT_EQ(std::string(error.what()),
              "ValueError: all_reduce on rank 1: the tensor must be a dense contiguous tensor; got a non-contiguous "
              "f32[4,4] (call .contiguous() first)");
  }
  EXPECT_EQ(seen_by_rank_0, comm_error(1,
                                       "ValueError: all_reduce on rank 1: the tensor must be a dense contiguous "
                                       "tensor; got a non-contiguous f32[4,4] (call .contiguous() first)",
                                       "all_reduce", 0));
}

TEST(BadCalls, ARankThatCatchesItsLocalErrorCanRetry) {
  std::vector<std::vector<float>> results(2);
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    Tensor tensor = ones(4).view({2, 2});
    if (rank == 1) {
      EXPECT_THROW(group.all_reduce(tensor.transpose(0, 1), ReduceOp::Sum), ValueError);
    }
    group.all_reduce(tensor, ReduceOp::Sum);  // rank 0 has been waiting in this one
    results[static_cast<size_t>(rank)] = tensor.to_vector<float>();
  });
  for (const auto& result : results) EXPECT_EQ(result, (std::vector<float>{2, 2, 2, 2}));
}

// Arguments that differ between ranks: every rank sees every rank's call, so every rank
// raises the same ValueError, and the group stays usable.
TEST(BadCalls, DisagreeingRanksAllRaiseTheSameValueError) {
  struct Case {
    std::function<void(int rank, ProcessGroup&)> call;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](int rank, ProcessGroup& g) { g.all_reduce(ones(rank == 0 ? 4 : 5), ReduceOp::Sum); },
       "all_reduce: the tensor has 4 elements on rank 0 and 5 on rank 1 (every rank must pass the same size)"},
      {[](int rank, ProcessGroup& g) {
         g.all_reduce(ones(4, rank == 0 ? DType::Float32 : DType::BFloat16), ReduceOp::Sum);
       },
       "all_reduce: the tensor is f32 on rank 0 and bf16 on rank 1 (every rank must pass the same dtype)"},
      {[](int rank, ProcessGroup& g) { g.all_reduce(ones(4), rank == 0 ? ReduceOp::Sum : ReduceOp::Max); },
       "all_reduce: rank 0 and rank 1 passed the ops sum and max (every rank must pass the same op)"},
      {[](int rank, ProcessGroup& g) { g.broadcast(ones(4), rank); },
       "broadcast: rank 0 and rank 1 passed the roots 0 and 1 (every rank must pass the same root)"},
      {[](int rank, ProcessGroup& g) {
         if (rank == 0)
           g.all_reduce(ones(4), ReduceOp::Sum);
         else
           g.barrier();
       },
       "collective mismatch: rank 0 called all_reduce and rank 1 called barrier (every rank of a group must call "
       "the same collectives in the same order)"},
      {[](int rank, ProcessGroup& g) { g.all_gather(ones(rank + 1), ones(2 * (rank + 1))); },
       "all_gather: the input has 1 elements on rank 0 and 2 on rank 1 (every rank must pass the same size)"},
  };
  std::atomic<int> value_errors{0};
  launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
    for (const Case& c : cases) {
      expect_value_error([&] { c.call(rank, group); }, c.message);
      value_errors.fetch_add(1);
      Tensor tensor = ones(2);
      group.all_reduce(tensor, ReduceOp::Sum);
      EXPECT_EQ(tensor.to_vector<float>(), (std::vector<float>{2, 2}));
    }
  });
  EXPECT_EQ(value_errors.load(), 2 * static_cast<int>(cases.size()));
}

TEST(BadCalls, ATensorSharedByEveryRankIsAValueError) {
  Tensor shared = ones(8);  // captured by reference: one tensor for both ranks
  Tensor shared_output = ones(8);
  launch_with_watchdog(2, [&](int, ProcessGroup& group) {
    const std::string why =
        " pass overlapping buffers (every rank needs its own tensors; a tensor that every rank's function captures "
        "by reference is one tensor for all ranks)";
    expect_value_error([&] { group.all_reduce(shared, ReduceOp::Sum); }, "all_reduce: rank 0 and rank 1" + why);
    expect_value_error([&] { group.all_gather(ones(4), shared_output); }, "all_gather: rank 0 and rank 1" + why);
    expect_value_error([&] { group.broadcast(shared, 0); }, "broadcast: rank 0 and rank 1" + why);
    // Reading one shared input is fine: only what a collective writes must be each rank's own.
    Tensor mine = Tensor::empty({8});
    group.all_to_all(shared, mine);
    EXPECT_EQ(mine.to_vector<float>(), std::vector<float>(8, 1.0f));
  });
  EXPECT_EQ(shared.to_vector<float>(), std::vector<float>(8, 1.0f));
}

// --- launch ---

TEST(Launch, WorldSizeBelowOneIsAValueError) {
  auto noop = [](int, ProcessGroup&) {};
  expect_value_error([&] { launch(0, noop, {.backend = Backend::Threads}); },
                     "launch: world_size must be at least 1 for the threads backend, got 0");
  EXPECT_THROW(launch(-3, noop, {.backend = Backend::Threads}), ValueError);
}

TEST(Launch, RepeatedLaunchesAreIndependent) {
  EXPECT_THROW(launch_with_watchdog(3,
                                    [](int rank, ProcessGroup& group) {
                                      if (rank == 0) throw Boom("first job fails");
                                      group.barrier();
                                    }),
               Boom);
  for (int job = 0; job < 20; ++job) {
    std::atomic<int> total{0};
    launch_with_watchdog(2, [&](int rank, ProcessGroup& group) {
      Tensor tensor = ones(1);
      group.all_reduce(tensor, ReduceOp::Sum);
      total.fetch_add(static_cast<int>(tensor.item<float>()) + rank);
    });
    EXPECT_EQ(total.load(), 5) << "job " << job;
  }
}

TEST(Launch, ConcurrentLaunchesDoNotSeeEachOther) {
  auto failing = std::async(std::launch::async, [] {
    launch_with_watchdog(3, [](int rank, ProcessGroup& group) {
      if (rank == 1) throw Boom("only this job fails");
      group.barrier();
    });
  });
  std::atomic<int> sums{0};
  auto passing = std::async(std::launch::async, [&] {
    launch_with_watchdog(3, [&](int, ProcessGroup& group) {
      for (int i = 0; i < 50; ++i) {
        Tensor tensor = ones(16);
        group.all_reduce(tensor, ReduceOp::Sum);
        sums.fetch_add(static_cast<int>(tensor.to_vector<float>()[0]));
      }
    });
  });
  EXPECT_THROW(failing.get(), Boom);
  EXPECT_NO_THROW(passing.get());
  EXPECT_EQ(sums.load(), 3 * 50 * 3);
}

// Sets (or with nullptr unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

TEST(Launch, AutoPicksThreadsUnlessTheEnvironmentSaysMpi) {
  auto noop = [](int, ProcessGroup&) {};
  {
    ScopedEnv backend("PARALLAX_BACKEND", nullptr), ompi("OMPI_COMM_WORLD_SIZE", nullptr);
    EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Threads);
    EXPECT_EQ(resolve_backend(Backend::Mpi), Backend::Mpi);
    EXPECT_NO_THROW(launch(2, noop));
  }
  {
    ScopedEnv backend("PARALLAX_BACKEND", nullptr), ompi("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Mpi);
    EXPECT_EQ(resolve_backend(Backend::Threads), Backend::Threads);
    // launch() on the mpi backend needs a real mpirun job: tests/mpi runs it there.
    EXPECT_NO_THROW(launch(2, noop, {.backend = Backend::Threads}));
  }
  {
    ScopedEnv backend("PARALLAX_BACKEND", "threads"), ompi("OMPI_COMM_WORLD_SIZE", "4");
    EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Threads);
  }
  {
    ScopedEnv backend("PARALLAX_BACKEND", "mpi"), ompi("OMPI_COMM_WORLD_SIZE", nullptr);
    EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Mpi);
  }
  {
    ScopedEnv backend("PARALLAX_BACKEND", "nccl");
    expect_value_error([] { resolve_backend(Backend::Auto); },
                       "PARALLAX_BACKEND=nccl: expected \"threads\" or \"mpi\"");
  }
  EXPECT_EQ(backend_name(Backend::Auto), "auto");
  EXPECT_EQ(backend_name(Backend::Threads), "threads");
  EXPECT_EQ(backend_name(Backend::Mpi), "mpi");
}

}  // namespace
}  // namespace px::dist

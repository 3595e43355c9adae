// Collective ops (dist/comm_ops.h) on real groups of the threads backend: values against
// references built from every rank's input, on the world and on a 2x2 mesh's sub-groups, through
// a traced graph (printed, parsed back, verified, interpreted), and their errors.

#include "parallax/dist/comm_ops.h"

#include <gtest/gtest.h>

#include <mutex>

#include "parallax/core/error.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dist/process_group.h"
#include "parallax/ir/interpreter.h"
#include "parallax/ir/parser.h"
#include "parallax/ir/printer.h"
#include "parallax/ir/tracer.h"
#include "parallax/ir/verifier.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/reduction.h"
#include "parallax/ops/shape.h"
#include "support/test_util.h"

namespace px::dist {
namespace {

// Rank r's input: a seeded [4, 6] float64 tensor.
Tensor input_of(int rank) { return testing::random_tensor({4, 6}, DType::Float64, 100 + static_cast<uint64_t>(rank)); }

// Runs fn on every rank of a 2x2 mesh; collects failures.
std::vector<std::string> on_2x2(
    const std::function<void(int, const MeshGroups&, const std::function<void(std::string)>&)>& fn) {
  std::mutex mutex;
  std::vector<std::string> failures;
  launch(
      4,
      [&](int rank, ProcessGroup& world) {
        MeshGroups groups(DeviceMesh({2, 2}), world);
        fn(rank, groups, [&](std::string what) {
          std::lock_guard<std::mutex> lock(mutex);
          failures.push_back("rank " + std::to_string(rank) + ": " + std::move(what));
        });
      },
      LaunchOptions{Backend::Threads});
  return failures;
}

#define EXPECT_NO_FAILURES(failures) \
  EXPECT_TRUE((failures).empty()) << (failures).size() << " failures, first: " << (failures).front()

TEST(CommOps, ValuesOnSubGroupsAndTheWorld) {
  auto failures = on_2x2([](int rank, const MeshGroups& groups, const auto& fail) {
    Tensor x = input_of(rank);
    for (int64_t dim = 0; dim < 2; ++dim) {
      const std::vector<int>& members = groups.group_ranks(dim);
      std::vector<Tensor> inputs;
      for (int member : members) inputs.push_back(input_of(member));
      std::string where = "mesh dim " + std::to_string(dim) + ": ";
      Tensor sum = inputs[0];
      Tensor max = inputs[0];
      for (size_t i = 1; i < inputs.size(); ++i) {
        sum = px::add(sum, inputs[i]);
        max = px::maximum(max, inputs[i]);
      }
      if (!testing::all_close(all_reduce(x, ReduceOp::Sum, members), sum)) fail(where + "all_reduce sum");
      if (!testing::all_close(all_reduce(x, ReduceOp::Max, members), max)) fail(where + "all_reduce max");
      Tensor gathered = all_gather(x, 1, members);
      if (!testing::all_close(gathered, px::cat(inputs, 1))) fail(where + "all_gather on dim 1");
      int64_t me = groups.coordinate(dim);
      Tensor scattered = reduce_scatter(x, ReduceOp::Sum, 0, members);
      if (!testing::all_close(scattered, sum.narrow(0, 2 * me, 2))) fail(where + "reduce_scatter on dim 0");
      // all_to_all(split 1, concat 0): chunk j of columns goes to rank j; rows from each source stack.
      std::vector<Tensor> received;
      for (const Tensor& source : inputs) received.push_back(source.narrow(1, 3 * me, 3));
      if (!testing::all_close(all_to_all(x, 1, 0, members), px::cat(received, 0))) fail(where + "all_to_all");
    }
    std::vector<Tensor> everyone;
    for (int member : groups.world_ranks()) everyone.push_back(input_of(member));
    if (!testing::all_close(all_gather(x, 0, groups.world_ranks()), px::cat(everyone, 0))) fail("world all_gather");
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(CommOps, TracedGraphRoundTripsAndRunsOnEveryRank) {
  auto failures = on_2x2([](int rank, const MeshGroups& groups, const auto& fail) {
    const std::vector<int>& rows = groups.group_ranks(0);
    const std::vector<int>& cols = groups.group_ranks(1);
    auto program = [&](const Tensor& x) {
      Tensor reduced = reduce_scatter(x, ReduceOp::Sum, 1, cols);
      return all_gather(all_reduce(reduced, ReduceOp::Avg, rows), 1, cols);
    };
    ir::Tracer tracer("collectives");
    Tensor proxy = tracer.add_input("x", {{4, 6}, DType::Float64});
    {
      InterceptScope scope(tracer);
      tracer.set_outputs({program(proxy)});
    }
    ir::Graph graph = tracer.finish();
    std::string text = ir::print(graph);
    ir::Graph parsed = ir::parse(text);
    if (ir::print(parsed) != text) fail("the printed graph does not parse back identically:\n" + text);
    if (!ir::verify_errors(parsed).empty()) fail("verifier: " + ir::verify_errors(parsed).front());
    if (text.find("all_gather") == std::string::npos) fail("no all_gather in\n" + text);
    Tensor x = input_of(rank);
    Tensor eager = program(x);
    Tensor interpreted = ir::interpret(parsed, {x})[0];
    if (!testing::all_close(interpreted, eager)) fail("interpreting the graph differs from eager");
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(CommOps, ShapeErrorsAndUnboundGroups) {
  auto failures = on_2x2([](int rank, const MeshGroups& groups, const auto& fail) {
    Tensor x = input_of(rank);
    // 6 columns do not split into 4 chunks: caught before any rank communicates.
    std::string message = testing::error_message([&] { reduce_scatter(x, ReduceOp::Sum, 1, {0, 1, 2, 3}); });
    if (message.find("does not divide into 4 equal chunks") == std::string::npos) fail(message);
    message = testing::error_message([&] { all_reduce(x, ReduceOp::Sum, {0, 2, 1}); });
    if (message.find("no process group of ranks [0,2,1]") == std::string::npos) fail(message);
    message = testing::error_message([&] {
      call("all_reduce", {x}, {{"op", std::string("prod")}, {"ranks", std::vector<int64_t>{0, 1}}});
    });
    if (message.find("unknown reduction 'prod'") == std::string::npos) fail(message);
    (void)groups;
  });
  EXPECT_NO_FAILURES(failures);
}

TEST(CommOps, MeshGroupsUnbindWhenDestroyed) {
  std::mutex mutex;
  std::vector<std::string> messages;
  launch(
      2,
      [&](int, ProcessGroup& world) {
        { MeshGroups groups(DeviceMesh({2}), world); }
        std::string message = testing::error_message([] {
          all_reduce(Tensor::zeros({1}), ReduceOp::Sum, std::vector<int>{0, 1});
        });
        std::lock_guard<std::mutex> lock(mutex);
        messages.push_back(message);
      },
      LaunchOptions{Backend::Threads});
  for (const std::string& message : messages) EXPECT_NE(message.find("CommError"), std::string::npos) << message;
}

}  // namespace
}  // namespace px::dist

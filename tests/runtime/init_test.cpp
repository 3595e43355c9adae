#include "parallax/runtime/init.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dist/sharding.h"
#include "parallax/nn/layers.h"
#include "parallax/nn/module.h"
#include "support/test_util.h"

namespace px::runtime {
namespace {

using nn::Init;
using Placements = std::vector<Placement>;

constexpr uint64_t kSeed = 1234;

// Every initializer kind and several ranks, including a scalar and dims that do not divide.
class Params : public nn::ModuleBase<Params> {
 public:
  explicit Params(DType dtype) {
    register_parameter("scalar", {}, Init::normal(0.5, 2.0), dtype);
    register_parameter("zeros", {5, 7}, Init::zeros(), dtype);
    register_parameter("ones", {7, 5}, Init::ones(), dtype);
    register_parameter("constant", {3, 4, 5}, Init::constant(0.3), dtype);
    register_parameter("normal", {10, 7}, Init::normal(0.1, 0.7), dtype);
    register_parameter("uniform", {7, 11}, Init::uniform(-0.5, 1.5), dtype);
    register_parameter("vector", {13}, Init::normal(0.0, 1.0), dtype);
    register_buffer("counts", {6, 5}, Init::constant(3.0), DType::Int64);
  }
};

class Stack : public nn::ModuleBase<Stack> {
 public:
  explicit Stack(DType dtype) {
    proj = register_module("proj", std::make_shared<nn::Linear>(9, 7, true, dtype));
    embed = register_module("embed", std::make_shared<nn::Embedding>(11, 6, dtype));
  }
  std::shared_ptr<nn::Linear> proj;
  std::shared_ptr<nn::Embedding> embed;
};

// The block [offset, offset + shape) of a dense tensor, contiguous.
Tensor block_of(const Tensor& full, const dist::LocalShard& shard) {
  Tensor out = full;
  for (int64_t d = 0; d < full.dim(); ++d) {
    out = out.slice(d, shard.offset[static_cast<size_t>(d)],
                    shard.offset[static_cast<size_t>(d)] + shard.shape[static_cast<size_t>(d)]);
  }
  return out.contiguous();
}

::testing::AssertionResult bit_identical(const Tensor& actual, const Tensor& expected) {
  if (actual.meta_info() != expected.meta_info()) {
    return ::testing::AssertionFailure() << actual.meta_info().str() << " vs " << expected.meta_info().str();
  }
  if (!actual.is_contiguous() || !expected.is_contiguous()) return ::testing::AssertionFailure() << "not contiguous";
  auto bytes = static_cast<size_t>(actual.meta_info().nbytes());
  if (bytes && std::memcmp(actual.raw_data(), expected.raw_data(), bytes) != 0) {
    return ::testing::AssertionFailure() << "values differ: " << to_string(actual) << " vs " << to_string(expected);
  }
  return ::testing::AssertionSuccess();
}

bool shards_within(const Placements& placements, int64_t ndim) {
  for (const Placement& p : placements) {
    if (const Shard* s = std::get_if<Shard>(&p); s && (s->dim >= ndim || s->dim < -ndim)) return false;
  }
  return true;
}

std::vector<std::vector<int64_t>> coordinates(const dist::DeviceMesh& mesh) {
  std::vector<std::vector<int64_t>> out;
  for (int rank : mesh.ranks()) out.push_back(mesh.coordinate(rank));
  return out;
}

// Materializes a second copy of the module and checks every rank's block of every slot
// against the same slice of the whole tensor. Returns the number of blocks compared.
template <class M, class... Args>
int64_t check_all_blocks(const dist::DeviceMesh& mesh, const std::vector<Placements>& placement_sets, Args... args) {
  M meta_module(args...);
  M dense_module(args...);
  dense_module.materialize(kSeed);
  std::vector<nn::SlotRef> meta_slots = meta_module.slots();
  std::vector<nn::SlotRef> dense_slots = dense_module.slots();
  int64_t compared = 0;
  for (size_t s = 0; s < meta_slots.size(); ++s) {
    const nn::SlotRef& slot = meta_slots[s];
    EXPECT_TRUE(slot.tensor->is_meta()) << slot.fqn;
    const Tensor& full = *dense_slots[s].tensor;
    const TensorMeta& global = slot.tensor->meta_info();
    uint64_t key = nn::init_stream_key(kSeed, slot.fqn);
    for (const Placements& placements : placement_sets) {
      if (!shards_within(placements, global.ndim())) continue;
      for (const std::vector<int64_t>& coord : coordinates(mesh)) {
        dist::LocalShard shard = dist::local_shard(global.shape, placements, mesh, coord);
        Tensor block = init_block(slot.init, key, global, shard.offset, shard.shape);
        EXPECT_TRUE(block.is_dense());
        EXPECT_TRUE(bit_identical(block, block_of(full, shard)))
            << slot.fqn << " " << global.str() << " at " << shape_str(coord) << " offset " << shape_str(shard.offset)
            << " shape " << shape_str(shard.shape);
        ++compared;
      }
    }
  }
  return compared;
}

const std::vector<Placements> kTwoDimPlacements = {
    {Shard{0}, Shard{1}},     {Shard{1}, Shard{0}},    {Shard{0}, Shard{0}},       {Shard{-1}, Shard{-1}},
    {Replicate{}, Shard{-1}}, {Shard{0}, Replicate{}}, {Replicate{}, Replicate{}}, {Shard{2}, Shard{0}},
};

class InitBlockDTypes : public ::testing::TestWithParam<DType> {};

TEST_P(InitBlockDTypes, EveryShardOfEveryInitMatchesMaterialize) {
  dist::DeviceMesh mesh({2, 3});
  int64_t compared = check_all_blocks<Params>(mesh, kTwoDimPlacements, GetParam());
  EXPECT_GT(compared, 200);
}

TEST_P(InitBlockDTypes, LinearAndEmbeddingShardsMatchMaterialize) {
  dist::DeviceMesh mesh({2, 3});
  EXPECT_GT(check_all_blocks<Stack>(mesh, kTwoDimPlacements, GetParam()), 100);
  dist::DeviceMesh line({4});
  EXPECT_GT(check_all_blocks<Stack>(line, {{Shard{0}}, {Shard{1}}, {Replicate{}}}, GetParam()), 20);
  dist::DeviceMesh cube({2, 2, 2});
  EXPECT_GT(
      check_all_blocks<Stack>(cube, {{Shard{0}, Shard{1}, Shard{0}}, {Shard{1}, Replicate{}, Shard{1}}}, GetParam()),
      20);
}

INSTANTIATE_TEST_SUITE_P(Runtime, InitBlockDTypes, ::testing::Values(DType::Float32, DType::Float64, DType::BFloat16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(InitBlock, ShardsOfAStandaloneLinearMatchItsWeight) {
  // A root module: the weight's FQN is just "weight".
  nn::Linear linear(5, 7);
  nn::Linear meta_linear(5, 7);
  linear.materialize(99);
  const nn::SlotRef slot = meta_linear.slots().front();
  ASSERT_EQ(slot.fqn, "weight");
  dist::DeviceMesh mesh({2, 3});
  for (const auto& coord : coordinates(mesh)) {
    dist::LocalShard shard = dist::local_shard(Shape{7, 5}, Placements{Shard{0}, Shard{1}}, mesh, coord);
    Tensor block =
        init_block(slot.init, nn::init_stream_key(99, "weight"), {{7, 5}, DType::Float32}, shard.offset, shard.shape);
    EXPECT_TRUE(bit_identical(block, block_of(linear.weight(), shard))) << shape_str(coord);
  }
}

TEST(InitBlock, ScalarBlock) {
  Init init = Init::uniform(2.0, 3.0);
  Tensor block = init_block(init, 7, {{}, DType::Float64}, {}, {});
  EXPECT_EQ(block.shape(), Shape{});
  EXPECT_EQ(block.item<double>(), nn::init_value(init, 7, 0));
}

TEST(InitBlock, EmptyBlocksAtTheEnd) {
  Tensor block = init_block(Init::normal(0, 1), 3, {{5, 4}, DType::Float32}, std::vector<int64_t>{5, 0}, {0, 4});
  EXPECT_EQ(block.shape(), (Shape{0, 4}));
  EXPECT_EQ(block.numel(), 0);
  Tensor middle = init_block(Init::normal(0, 1), 3, {{5, 4}, DType::Float32}, std::vector<int64_t>{2, 4}, {3, 0});
  EXPECT_EQ(middle.shape(), (Shape{3, 0}));
}

TEST(InitBlock, IntegerAndBoolConstants) {
  Tensor ints = init_block(Init::constant(-4), 0, {{6, 5}, DType::Int64}, std::vector<int64_t>{2, 1}, {3, 2});
  EXPECT_EQ(ints.to_vector<int64_t>(), std::vector<int64_t>(6, -4));
  Tensor flags = init_block(Init::ones(), 0, {{4}, DType::Bool}, std::vector<int64_t>{1}, {2});
  EXPECT_EQ(flags.to_vector<bool>(), std::vector<bool>(2, true));
}

TEST(InitBlock, BlockOfAHugeMetaShapeIsCheap) {
  const TensorMeta global{{int64_t{1} << 20, int64_t{1} << 16}, DType::Float32};
  Init init = Init::normal(0.0, 0.02);
  uint64_t key = nn::init_stream_key(kSeed, "layers.31.mlp.w1.weight");
  std::vector<int64_t> offset{(int64_t{1} << 20) - 3, (int64_t{1} << 15) + 5};
  auto start = std::chrono::steady_clock::now();
  Tensor block = init_block(init, key, global, offset, {3, 4});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);  // 12 draws, not 2^36
  ASSERT_EQ(block.shape(), (Shape{3, 4}));
  EXPECT_EQ(block.storage()->nbytes(), 12 * 4);
  std::vector<float> values = block.to_vector<float>();
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      auto index = static_cast<uint64_t>((offset[0] + i) * global.shape[1] + offset[1] + j);
      EXPECT_EQ(values[static_cast<size_t>(i * 4 + j)], static_cast<float>(nn::init_value(init, key, index)));
    }
  }
  // The same shard through a mesh over a module's meta parameter.
  class Huge : public nn::ModuleBase<Huge> {
   public:
    Huge() { register_parameter("w", {int64_t{1} << 20, int64_t{1} << 16}, Init::uniform(-1, 1), DType::BFloat16); }
  } huge;
  nn::SlotRef slot = huge.slots().front();
  dist::DeviceMesh mesh({1024, 256});
  dist::LocalShard shard =
      dist::local_shard(slot.tensor->shape(), Placements{Shard{0}, Shard{1}}, mesh, std::vector<int64_t>{1023, 255});
  Tensor local =
      init_block(slot.init, nn::init_stream_key(kSeed, "w"), slot.tensor->meta_info(), shard.offset, shard.shape);
  EXPECT_EQ(local.shape(), (Shape{1024, 256}));
  EXPECT_EQ(local.dtype(), DType::BFloat16);
  int64_t last_index = (shard.offset[0] + 1023) * (int64_t{1} << 16) + shard.offset[1] + 255;
  double last = nn::init_value(slot.init, nn::init_stream_key(kSeed, "w"), static_cast<uint64_t>(last_index));
  EXPECT_EQ(element_as_double(local, local.numel() - 1), static_cast<float>(BFloat16(static_cast<float>(last))));
}

TEST(InitBlock, Errors) {
  using px::testing::error_message;
  const TensorMeta global{{4, 6}, DType::Float32};
  const std::vector<int64_t> origin{0, 0};
  EXPECT_EQ(error_message([&] {
              init_block(Init::given(), 0, global, origin, {2, 2});
            }),
            "ValueError: init_block: block at offset [0,0] of shape [2,2] of f32[4,6]: a given initializer has no "
            "values to draw (the slot holds its own)");
  EXPECT_EQ(error_message([&] {
              init_block(Init::zeros(), 0, global, std::vector<int64_t>{0}, {2, 2});
            }),
            "ValueError: init_block: block at offset [0] of shape [2,2] of f32[4,6]: the offset and the block shape "
            "need one entry per global dim (2)");
  EXPECT_EQ(error_message([&] { init_block(Init::zeros(), 0, global, origin, {2}); }),
            "ValueError: init_block: block at offset [0,0] of shape [2] of f32[4,6]: the offset and the block shape "
            "need one entry per global dim (2)");
  EXPECT_EQ(error_message([&] {
              init_block(Init::zeros(), 0, global, std::vector<int64_t>{3, 0}, {2, 6});
            }),
            "ValueError: init_block: block at offset [3,0] of shape [2,6] of f32[4,6]: dim 0 covers [3, 5), outside "
            "[0, 4)");
  EXPECT_EQ(error_message([&] {
              init_block(Init::zeros(), 0, global, std::vector<int64_t>{0, -1}, {2, 2});
            }),
            "ValueError: init_block: block at offset [0,-1] of shape [2,2] of f32[4,6]: negative offset or size in "
            "dim 1");
  EXPECT_EQ(error_message([&] {
              init_block(Init::zeros(), 0, global, origin, {2, -2});
            }),
            "ValueError: init_block: block at offset [0,0] of shape [2,-2] of f32[4,6]: negative offset or size in "
            "dim 1");
  EXPECT_EQ(error_message([&] {
              init_block(Init::normal(0, 1), 0, {{4, 6}, DType::Int64}, origin, {2, 2});
            }),
            "ValueError: init_block: block at offset [0,0] of shape [2,2] of i64[4,6]: a normal initializer needs a "
            "floating dtype, not i64");
  EXPECT_EQ(error_message([&] {
              init_block(Init::constant(0.5), 0, {{4, 6}, DType::Bool}, origin, {2, 2});
            }),
            "ValueError: init_block: block at offset [0,0] of shape [2,2] of bool[4,6]: the constant 0.500000 is not "
            "an integer, but the dtype is bool");
}

}  // namespace
}  // namespace px::runtime

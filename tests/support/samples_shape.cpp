#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::testing {

namespace {

Tensor x(const Shape& shape, uint64_t seed) { return random_tensor(shape, DType::Float64, seed); }

std::vector<OpSample> view_samples() {
  return {
      {"view", {x({2, 3, 4}, 1)}, {{"shape", Shape{6, -1}}}, true, ""},
      {"view", {non_contiguous(x({4, 3}, 2)).unsqueeze(0)}, {{"shape", Shape{4, 3}}}, true, "non-contiguous"},
      {"reshape", {x({2, 3, 4}, 3)}, {{"shape", Shape{4, 6}}}, true, "view"},
      {"reshape", {non_contiguous(x({3, 4}, 4))}, {{"shape", Shape{-1}}}, true, "non-contiguous: copies"},
      {"permute", {x({2, 3, 4}, 5)}, {{"dims", Shape{2, 0, 1}}}, true, ""},
      {"transpose", {x({2, 3, 4}, 6)}, {{"dim0", int64_t{0}}, {"dim1", int64_t{-1}}}, true, ""},
      {"expand", {x({3, 1}, 7)}, {{"shape", Shape{2, 3, 4}}}, true, "broadcast"},
      {"expand", {x({3, 1}, 8)}, {{"shape", Shape{-1, 5}}}, true, "keep dim"},
      {"squeeze", {x({1, 3, 1, 2}, 9)}, {}, true, "all"},
      {"squeeze", {x({1, 3, 1, 2}, 10)}, {{"dims", Shape{2}}}, true, "one dim"},
      {"unsqueeze", {x({3, 2}, 11)}, {{"dim", int64_t{-1}}}, true, ""},
  };
}

std::vector<OpSample> slice_samples() {
  return {
      {"slice",
       {x({5, 4}, 20)},
       {{"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}},
       true,
       "step 2"},
      {"slice",
       {non_contiguous(x({3, 6}, 21))},
       {{"dim", int64_t{1}}, {"start", int64_t{-4}}, {"end", int64_t{100}}},
       true,
       "negative start, clamped end, non-contiguous"},
      {"narrow", {x({3, 5}, 22)}, {{"dim", int64_t{1}}, {"start", int64_t{1}}, {"length", int64_t{3}}}, true, ""},
      {"select", {x({3, 4}, 23)}, {{"dim", int64_t{1}}, {"index", int64_t{-1}}}, true, ""},
      {"slice_backward",
       {x({2, 4}, 24)},
       {{"shape", Shape{5, 4}}, {"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}},
       true,
       ""},
  };
}

std::vector<OpSample> copy_samples() {
  return {
      {"contiguous", {non_contiguous(x({3, 4}, 30))}, {}, true, "non-contiguous"},
      {"contiguous", {x({3, 4}, 31)}, {}, true, "already contiguous"},
      {"clone", {non_contiguous(x({2, 3}, 32))}, {}, true, ""},
      {"cast", {x({2, 3}, 33)}, {{"dtype", DType::Float64}}, true, "same dtype"},
      {"cast", {x({2, 3}, 34)}, {{"dtype", DType::Float32}}, false, "to f32 (finite differences too coarse)"},
      {"cast", {x({2, 3}, 35)}, {{"dtype", DType::Int64}}, false, "to int: no gradient"},
      {"cast", {random_tensor({4}, DType::BFloat16, 36)}, {{"dtype", DType::Float32}}, false, "bf16 to f32"},
      {"triu", {x({2, 3, 4}, 37)}, {{"diagonal", int64_t{1}}}, true, "batched"},
      {"tril", {non_contiguous(x({4, 3}, 38))}, {{"diagonal", int64_t{-1}}}, true, "non-contiguous"},
  };
}

std::vector<OpSample> join_samples() {
  return {
      {"cat", {x({2, 3}, 40), x({2, 1}, 41), non_contiguous(x({2, 4}, 42))}, {{"dim", int64_t{1}}}, true, ""},
      {"cat", {x({1, 3}, 43), x({2, 3}, 44)}, {}, true, "dim 0"},
      {"stack", {x({2, 3}, 45), non_contiguous(x({2, 3}, 46))}, {{"dim", int64_t{1}}}, true, ""},
      {"split", {x({5, 3}, 47)}, {{"sizes", Shape{2, 0, 3}}, {"dim", int64_t{0}}}, true, ""},
      {"split", {non_contiguous(x({3, 4}, 48))}, {{"sizes", Shape{1, 3}}, {"dim", int64_t{-1}}}, true, ""},
      {"chunk", {x({3, 7}, 49)}, {{"chunks", int64_t{3}}, {"dim", int64_t{1}}}, true, "uneven"},
  };
}

}  // namespace

std::vector<OpSample> shape_samples() {
  std::vector<OpSample> all;
  for (auto family : {view_samples, slice_samples, copy_samples, join_samples}) {
    for (OpSample& sample : family()) all.push_back(std::move(sample));
  }
  return all;
}

}  // namespace px::testing

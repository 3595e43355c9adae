#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::testing {

namespace {

Tensor x(const Shape& shape, uint64_t seed) { return random_tensor(shape, DType::Float64, seed); }

// A [copies, ...] view of `t` with stride 0 on the new dim (a broadcast input).
Tensor broadcast(const Tensor& t, int64_t copies) {
  Shape shape = t.shape();
  Strides strides = t.strides();
  shape.insert(shape.begin(), copies);
  strides.insert(strides.begin(), 0);
  return Tensor::alias(t, shape, strides, t.offset());
}

Attrs dims(std::vector<int64_t> reduced, bool keepdim = false) {
  return {{"dims", std::move(reduced)}, {"keepdim", keepdim}};
}

std::vector<OpSample> samples_of(const std::string& op, uint64_t seed) {
  // Copies of one value tie for the max, so amax/amin keep the broadcast dim.
  bool extreme = op == "amax" || op == "amin";
  return {
      {op, {x({3, 4, 5}, seed)}, dims({1}), true, "middle dim"},
      {op, {x({3, 4, 5}, seed + 1)}, dims({}), true, "all dims"},
      {op, {x({3, 4, 5}, seed + 2)}, dims({0, -1}, true), true, "two dims keepdim"},
      {op, {non_contiguous(x({4, 6}, seed + 3))}, dims({1}), true, "non-contiguous"},
      {op, {broadcast(x({4, 5}, seed + 4), 3)}, extreme ? dims({2}) : dims({0, 2}), true, "broadcast"},
  };
}

}  // namespace

std::vector<OpSample> reduction_samples() {
  std::vector<OpSample> all;
  uint64_t seed = 300;
  for (const char* op : {"sum", "mean", "amax", "amin"}) {
    for (OpSample& sample : samples_of(op, seed)) all.push_back(std::move(sample));
    seed += 10;
  }
  all.push_back({"sum", {random_ints({3, 4}, -5, 5, 350)}, dims({0}), false, "int64"});
  // Two-way ties: the even split of the gradient equals the mean of the one-sided slopes.
  all.push_back({"amax", {Tensor::from_vector({1, 3, 3, 0, 2, 5}, {2, 3}, DType::Float64)}, dims({1}), true, "ties"});
  all.push_back({"argmax", {x({3, 4, 5}, 360)}, {{"dim", int64_t{1}}}, false, "one dim"});
  all.push_back({"argmax", {non_contiguous(x({4, 6}, 361))}, {}, false, "flattened non-contiguous"});
  all.push_back({"argmax", {x({3, 4}, 362)}, {{"dim", int64_t{-1}}, {"keepdim", true}}, false, "keepdim"});
  return all;
}

}  // namespace px::testing

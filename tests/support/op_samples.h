#pragma once
// Sample calls of every built-in op, used by the generic op harness (infer vs
// kernel, VJP vs finite differences, cost) and by the IR round-trip tests.
// Each op family contributes its own list in tests/support/samples_<family>.cpp.

#include <ostream>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ops/attrs.h"

namespace px::testing {

struct OpSample {
  std::string op;
  std::vector<Tensor> inputs;  // float64 where differentiable, so finite differences are exact enough
  Attrs attrs;
  bool check_vjp = true;  // false for non-differentiable ops
  std::string note;       // e.g. "broadcast", "non-contiguous"
};

// gtest prints samples through this (instead of a byte dump) when a case fails.
void PrintTo(const OpSample& sample, std::ostream* os);

std::vector<OpSample> elementwise_samples();
std::vector<OpSample> reduction_samples();
std::vector<OpSample> linalg_samples();
std::vector<OpSample> nn_samples();
std::vector<OpSample> shape_samples();
std::vector<OpSample> factory_samples();

std::vector<OpSample> all_op_samples();

}  // namespace px::testing

#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::testing {

namespace {

Tensor x(const Shape& shape, uint64_t seed) { return random_tensor(shape, DType::Float64, seed); }

}  // namespace

std::vector<OpSample> linalg_samples() {
  return {
      {"matmul", {x({3, 4}, 400), x({4, 5}, 401)}, {}, true, "matrix"},
      {"matmul", {x({4}, 402), x({4, 5}, 403)}, {}, true, "vector lhs"},
      {"matmul", {x({3, 4}, 404), x({4}, 405)}, {}, true, "vector rhs"},
      {"matmul", {x({4}, 406), x({4}, 407)}, {}, true, "dot"},
      {"matmul", {x({2, 3, 4}, 408), x({4, 5}, 409)}, {}, true, "batch folded"},
      {"matmul", {x({2, 1, 3, 4}, 410), x({3, 4, 2}, 411)}, {}, true, "broadcast batch"},
      {"matmul", {non_contiguous(x({2, 3, 4}, 412)), non_contiguous(x({2, 4, 5}, 413))}, {}, true, "non-contiguous"},
      {"linear", {x({2, 3, 4}, 420), x({5, 4}, 421), x({5}, 422)}, {}, true, "bias"},
      {"linear", {x({3, 4}, 423), x({5, 4}, 424)}, {}, true, "no bias"},
      {"linear", {x({4}, 425), x({5, 4}, 426), x({5}, 427)}, {}, true, "vector input"},
      {"linear",
       {non_contiguous(x({3, 4}, 428)), non_contiguous(x({5, 4}, 429)), x({5}, 430)},
       {},
       true,
       "non-contiguous"},
  };
}

}  // namespace px::testing

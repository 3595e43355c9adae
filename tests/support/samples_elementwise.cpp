#include <cmath>

#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::testing {

namespace {

constexpr DType kF64 = DType::Float64;

Tensor x(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  return random_tensor(shape, kF64, seed, low, high);
}

// Values with |v| in [0.2, 1.2] and random signs: away from the kinks of abs and relu at 0.
Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  std::vector<double> values = x(shape, seed).to_vector<double>();
  for (double& v : values) v = std::copysign(0.2 + std::abs(v), v);
  return Tensor::from_vector(values, shape, kF64);
}

Tensor bools(std::initializer_list<double> values, const Shape& shape) {
  return Tensor::from_vector(values, shape, DType::Bool);
}

void add_binary_samples(std::vector<OpSample>& all, const std::string& op, uint64_t seed, double low, double high) {
  // `low`/`high` bound the second operand (div keeps it away from 0).
  all.push_back({op, {x({3, 4}, seed), x({3, 4}, seed + 1, low, high)}, {}, true, "same shape"});
  all.push_back({op, {x({2, 3, 4}, seed + 2), x({4}, seed + 3, low, high)}, {}, true, "broadcast trailing"});
  all.push_back({op, {x({3, 1}, seed + 4), x({1, 4}, seed + 5, low, high)}, {}, true, "broadcast both"});
  all.push_back({op,
                 {non_contiguous(x({4, 3}, seed + 6)), non_contiguous(x({4, 3}, seed + 7, low, high))},
                 {},
                 true,
                 "non-contiguous"});
  all.push_back({op, {x({}, seed + 8), x({2, 3}, seed + 9, low, high)}, {}, true, "scalar lhs"});
}

void add_scalar_samples(std::vector<OpSample>& all, const std::string& op, uint64_t seed, double low, double high,
                        double scalar) {
  all.push_back({op, {x({3, 4}, seed, low, high)}, {{"scalar", scalar}}, true, "contiguous"});
  all.push_back({op, {non_contiguous(x({3, 4}, seed + 1, low, high))}, {{"scalar", scalar}}, true, "non-contiguous"});
}

void add_unary_samples(std::vector<OpSample>& all, const std::string& op, const Tensor& contiguous, const Tensor& other,
                       const Attrs& attrs = {}) {
  all.push_back({op, {contiguous}, attrs, true, "contiguous"});
  all.push_back({op, {non_contiguous(other)}, attrs, true, "non-contiguous"});
}

void add_compare_samples(std::vector<OpSample>& all, const std::string& op, uint64_t seed) {
  Tensor a = x({3, 4}, seed);
  all.push_back({op, {a, x({3, 4}, seed + 1)}, {}, false, "f64"});
  all.push_back({op, {a, a}, {}, false, "equal values"});
  all.push_back(
      {op, {random_ints({2, 3}, -2, 2, seed + 2), random_ints({3}, -2, 2, seed + 3)}, {}, false, "i64 broadcast"});
  all.push_back({op, {bools({1, 0, 1}, {3, 1}), bools({0, 1}, {2})}, {}, false, "bool broadcast"});
  all.push_back({op, {non_contiguous(x({4, 3}, seed + 4)), x({3}, seed + 5)}, {}, false, "non-contiguous"});
}

}  // namespace

std::vector<OpSample> elementwise_samples() {
  std::vector<OpSample> all;
  add_binary_samples(all, "add", 100, -1, 1);
  add_binary_samples(all, "sub", 110, -1, 1);
  add_binary_samples(all, "mul", 120, -1, 1);
  add_binary_samples(all, "div", 130, 0.5, 2);
  add_binary_samples(all, "maximum", 140, -1, 1);
  add_binary_samples(all, "minimum", 150, -1, 1);
  all.push_back({"add", {random_ints({2, 3}, -9, 9, 160), random_ints({3}, -9, 9, 161)}, {}, false, "i64"});
  all.push_back({"maximum", {random_ints({2, 3}, -9, 9, 162), random_ints({2, 3}, -9, 9, 163)}, {}, false, "i64"});
  all.push_back({"mul",
                 {random_tensor({2, 3}, DType::BFloat16, 164), random_tensor({3}, DType::BFloat16, 165)},
                 {},
                 false,
                 "bf16"});

  add_scalar_samples(all, "add_scalar", 200, -1, 1, 1.5);
  add_scalar_samples(all, "sub_scalar", 202, -1, 1, 1.5);
  add_scalar_samples(all, "rsub_scalar", 204, -1, 1, 1.5);
  add_scalar_samples(all, "mul_scalar", 206, -1, 1, -2.5);
  add_scalar_samples(all, "div_scalar", 208, -1, 1, -2.5);
  add_scalar_samples(all, "rdiv_scalar", 210, 0.5, 2, 3.0);
  all.push_back({"add_scalar", {random_ints({4}, -9, 9, 212)}, {{"scalar", 3.0}}, false, "i64"});
  for (double exponent : {3.0, 2.0, 0.5, -1.5, 0.0}) {
    all.push_back({"pow", {x({3, 4}, 214, 0.5, 2)}, {{"exponent", exponent}}, true, "exponent"});
  }
  all.push_back({"pow", {non_contiguous(x({3, 4}, 215, 0.5, 2))}, {{"exponent", 1.7}}, true, "non-contiguous"});

  add_unary_samples(all, "neg", x({3, 4}, 300), x({4, 3}, 301));
  add_unary_samples(all, "abs", away_from_zero({3, 4}, 302), away_from_zero({4, 3}, 303));
  add_unary_samples(all, "exp", x({3, 4}, 304), x({4, 3}, 305));
  add_unary_samples(all, "log", x({3, 4}, 306, 0.5, 2), x({4, 3}, 307, 0.5, 2));
  add_unary_samples(all, "sqrt", x({3, 4}, 308, 0.5, 2), x({4, 3}, 309, 0.5, 2));
  add_unary_samples(all, "rsqrt", x({3, 4}, 310, 0.5, 2), x({4, 3}, 311, 0.5, 2));
  add_unary_samples(all, "tanh", x({3, 4}, 312, -3, 3), x({4, 3}, 313, -3, 3));
  add_unary_samples(all, "sigmoid", x({3, 4}, 314, -3, 3), x({4, 3}, 315, -3, 3));
  add_unary_samples(all, "relu", away_from_zero({3, 4}, 316), away_from_zero({4, 3}, 317));
  add_unary_samples(all, "silu", x({3, 4}, 318, -3, 3), x({4, 3}, 319, -3, 3));
  all.push_back({"relu", {random_ints({5}, -3, 3, 320)}, {}, false, "i64"});
  for (const char* approximate : {"none", "tanh"}) {
    Attrs attrs{{"approximate", std::string(approximate)}};
    add_unary_samples(all, "gelu", x({3, 4}, 330, -3, 3), x({4, 3}, 331, -3, 3), attrs);
    all.push_back({"gelu_backward", {x({3, 4}, 332), x({3, 4}, 333, -3, 3)}, attrs, true, approximate});
    all.push_back({"gelu_backward",
                   {non_contiguous(x({4, 3}, 334)), x({4, 3}, 335, -3, 3)},
                   attrs,
                   true,
                   std::string(approximate) + " non-contiguous"});
  }
  all.push_back({"gelu", {random_tensor({2, 3}, DType::Float32, 336, -3, 3)}, {}, false, "f32"});

  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) add_compare_samples(all, op, 400);

  Tensor cond = bools({1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1}, {3, 4});
  all.push_back({"where", {cond, x({3, 4}, 500), x({3, 4}, 501)}, {}, true, "same shape"});
  all.push_back({"where", {cond, x({3, 1}, 502), x({4}, 503)}, {}, true, "broadcast values"});
  all.push_back({"where",
                 {bools({1, 0, 1}, {3, 1}), x({2, 3, 4}, 504), non_contiguous(x({3, 4}, 505))},
                 {},
                 true,
                 "broadcast cond"});
  all.push_back({"where", {cond, random_ints({3, 4}, 0, 9, 506), random_ints({}, 0, 9, 507)}, {}, false, "i64"});
  return all;
}

}  // namespace px::testing

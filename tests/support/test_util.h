#pragma once
// Helpers shared by the test suites: seeded random inputs, non-contiguous
// copies, comparisons, and the finite-difference VJP check.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ops/attrs.h"

namespace px::testing {

// Deterministic values in [low, high) from a seed (std::mt19937_64, local to the call).
Tensor random_tensor(const Shape& shape, DType dtype = DType::Float64, uint64_t seed = 0, double low = -1.0,
                     double high = 1.0);
// Random integers in [low, high).
Tensor random_ints(const Shape& shape, int64_t low, int64_t high, uint64_t seed = 0);
// Same values as `tensor`, stored so that the result is NOT contiguous
// (a transposed copy transposed back; for rank < 2 a strided slice of a bigger buffer).
Tensor non_contiguous(const Tensor& tensor);

// Element-wise closeness over the logical (row-major) values; shapes must match.
::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-12,
                                     double atol = 1e-12);
::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected, double rtol = 1e-12,
                                     double atol = 1e-12);

// Checks op `op_name`'s VJP against central finite differences in float64:
// for a random cotangent g on every floating output, compares the VJP's gradient for
// every floating input with d<g, op(x)>/dx, as the norm-wise relative error
// ||vjp - fd|| / max(||vjp||, ||fd||, 1e-300) <= rel_tol.
::testing::AssertionResult check_vjp(const std::string& op_name, const std::vector<Tensor>& inputs,
                                     const Attrs& attrs = {}, double rel_tol = 1e-6, double eps = 1e-6);

// The what() of the px::Error that `fn` throws, or "(no error)".
std::string error_message(const std::function<void()>& fn);

// Asserts that `fn` throws ValueError with exactly `message` (after the "ValueError: " prefix).
template <class Fn>
void expect_value_error(Fn&& fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected ValueError: " << message;
  } catch (const ValueError& error) {
    EXPECT_EQ(std::string(error.what()), "ValueError: " + message);
  }
}

// A fresh path under the test temporary directory (not created).
std::string temp_path(const std::string& name);
// A whole file as bytes ("" when it cannot be read), and a file written with these bytes.
std::string slurp(const std::string& path);
void spit(const std::string& path, const std::string& text);

}  // namespace px::testing

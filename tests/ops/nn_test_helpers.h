#pragma once
// Helpers for the NN family's op tests: error-message checks and naive float64
// references written with plain loops over row-major values.

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"

namespace px::testing {

// The what() of the E that `fn` throws, or "<nothing thrown>". Other exception types escape and fail the test.
template <class E, class Fn>
std::string thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const E& error) {
    return error.what();
  }
  return "<nothing thrown>";
}

// Every part occurs in `text`.
inline ::testing::AssertionResult mentions(const std::string& text, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    if (text.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "\"" << text << "\" does not mention \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

// The shape split around `dim`: [outer, n, inner].
struct Split3 {
  int64_t outer = 1, n = 1, inner = 1;
};

inline Split3 split3(const Shape& shape, int64_t dim) {
  Split3 s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) s.outer *= shape[d];
    if (d == dim) s.n = shape[d];
    if (d > dim) s.inner *= shape[d];
  }
  return s;
}

// (log-)softmax of `x` along `dim` (non-negative), computed naively in float64.
inline std::vector<double> softmax_reference(const Tensor& x, int64_t dim, bool log) {
  std::vector<double> v = x.to_vector<double>();
  std::vector<double> out(v.size());
  Split3 s = split3(x.shape(), dim);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t k = 0; k < s.inner; ++k) {
      auto at = [&](int64_t j) { return (o * s.n + j) * s.inner + k; };
      double max = -INFINITY;
      for (int64_t j = 0; j < s.n; ++j) max = std::max(max, v[at(j)]);
      double total = 0;
      for (int64_t j = 0; j < s.n; ++j) total += std::exp(v[at(j)] - max);
      for (int64_t j = 0; j < s.n; ++j) {
        out[at(j)] = log ? v[at(j)] - max - std::log(total) : std::exp(v[at(j)] - max) / total;
      }
    }
  }
  return out;
}

}  // namespace px::testing

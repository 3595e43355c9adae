#pragma once
// Helpers for the shape and factory op tests: row-major index arithmetic for the
// naive references, and error-message capture.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"

namespace px::testing {

inline std::vector<int64_t> unravel(int64_t linear, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

inline int64_t ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d) linear = linear * shape[d] + index[d];
  return linear;
}

// Expected values of an output of `out_shape` whose element at `index` is
// input element `source(index)` (a row-major index into `input`).
inline std::vector<double> gather_reference(const Tensor& input, const Shape& out_shape,
                                            const std::function<std::vector<int64_t>(std::vector<int64_t>)>& source) {
  std::vector<double> in = input.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(numel(out_shape)));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    out[i] = in[ravel(source(unravel(i, out_shape)), input.shape())];
  }
  return out;
}

// The text of the px::Error `fn` throws, or "<no error>".
inline std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

// EXPECT that `fn` throws E with a message containing every piece.
template <class E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& pieces) {
  EXPECT_THROW(fn(), E);
  std::string message = message_of(fn);
  for (const std::string& piece : pieces) {
    EXPECT_NE(message.find(piece), std::string::npos) << "message: " << message << "\nmissing: " << piece;
  }
}

}  // namespace px::testing

#pragma once
// Helpers shared by the elementwise op tests: an independent broadcasting
// reference (float64, plain index arithmetic over logical values), per-dtype
// tolerances, input layouts, and error-message checks.

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"
#include "support/test_util.h"

namespace px::elementwise_testing {

// NumPy broadcasting, written independently of px::broadcast_shapes.
inline Shape reference_broadcast(std::initializer_list<Shape> shapes) {
  size_t rank = 0;
  for (const Shape& shape : shapes) rank = std::max(rank, shape.size());
  Shape out(rank, 1);
  for (const Shape& shape : shapes) {
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t& slot = out[rank - shape.size() + i];
      if (shape[i] != 1) slot = shape[i];
    }
  }
  return out;
}

// Row-major index into `shape` of output element `out_index` of `out_shape`, under broadcasting.
inline int64_t source_index(const Shape& shape, const Shape& out_shape, int64_t out_index) {
  int64_t index = 0;
  int64_t stride = 1;
  for (size_t d = out_shape.size(); d-- > 0;) {
    int64_t coord = out_index % out_shape[d];
    out_index /= out_shape[d];
    size_t lead = out_shape.size() - shape.size();
    if (d < lead) continue;
    int64_t extent = shape[d - lead];
    index += (extent == 1 ? 0 : coord) * stride;
    stride *= extent;
  }
  return index;
}

// fn applied elementwise to the broadcast inputs' logical values.
inline std::vector<double> reference_map(const std::vector<Tensor>& inputs,
                                         const std::function<double(const std::vector<double>&)>& fn) {
  Shape out_shape(0);
  for (const Tensor& input : inputs) out_shape = reference_broadcast({out_shape, input.shape()});
  std::vector<std::vector<double>> values;
  for (const Tensor& input : inputs) values.push_back(input.to_vector<double>());
  std::vector<double> out(static_cast<size_t>(numel(out_shape)));
  std::vector<double> args(inputs.size());
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      args[k] = values[k][static_cast<size_t>(source_index(inputs[k].shape(), out_shape, i))];
    }
    out[static_cast<size_t>(i)] = fn(args);
  }
  return out;
}

struct Tolerance {
  double rtol;
  double atol;
};

// Float64 computes exactly what the reference does (up to libm); float32 runs the
// vectorized approximations (a few ulp); bfloat16 rounds each result to 8 bits.
inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return {1e-12, 1e-14};
    case DType::Float32:
      return {1e-5, 1e-6};
    case DType::BFloat16:
      return {1e-2, 1e-3};
    case DType::Int64:
    case DType::Bool:
      return {0, 0};
  }
  return {0, 0};
}

// Random values of `dtype` in [low, high) (integers for int64).
inline Tensor random_of(const Shape& shape, DType dtype, uint64_t seed, double low = -2, double high = 2) {
  if (dtype == DType::Int64)
    return testing::random_ints(shape, static_cast<int64_t>(low) * 10, static_cast<int64_t>(high) * 10, seed);
  return testing::random_tensor(shape, dtype, seed, low, high);
}

// Runs `fn` and returns the message of the E it throws (a test failure when it throws nothing or something else).
template <class E, class Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const E& error) {
    return error.what();
  } catch (const std::exception& other) {
    ADD_FAILURE() << "threw a different exception: " << other.what();
    return "";
  }
  ADD_FAILURE() << "threw nothing";
  return "";
}

inline ::testing::AssertionResult contains_all(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    if (message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace px::elementwise_testing

#include "support/test_util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "parallax/ops/dispatch.h"

namespace px::testing {

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double low, double high) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<double> values(static_cast<size_t>(numel(shape)));
  for (double& value : values) value = dist(engine);
  return Tensor::from_vector(values, shape, dtype);
}

Tensor random_ints(const Shape& shape, int64_t low, int64_t high, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int64_t> dist(low, high - 1);
  std::vector<double> values(static_cast<size_t>(numel(shape)));
  for (double& value : values) value = static_cast<double>(dist(engine));
  return Tensor::from_vector(values, shape, DType::Int64);
}

Tensor non_contiguous(const Tensor& tensor) {
  const Shape& shape = tensor.shape();
  int64_t count = tensor.numel();
  std::vector<double> values = tensor.to_vector<double>();
  if (shape.size() >= 2) {
    // Store with the last two dims swapped, then view it with swapped strides.
    Shape stored_shape = shape;
    std::swap(stored_shape[shape.size() - 1], stored_shape[shape.size() - 2]);
    int64_t rows = shape[shape.size() - 2], cols = shape[shape.size() - 1];
    std::vector<double> stored(values.size());
    int64_t batch = rows * cols;
    for (int64_t b = 0; b < count / std::max<int64_t>(batch, 1); ++b) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) stored[b * batch + c * rows + r] = values[b * batch + r * cols + c];
      }
    }
    Tensor base = Tensor::from_vector(stored, stored_shape, tensor.dtype());
    Strides strides = base.strides();
    std::swap(strides[shape.size() - 1], strides[shape.size() - 2]);
    return Tensor::alias(base, shape, strides, 0);
  }
  // Rank 0 or 1: every other element of a buffer twice as long, starting at offset 1.
  std::vector<double> spread(static_cast<size_t>(2 * count + 1), -777.0);
  for (int64_t i = 0; i < count; ++i) spread[static_cast<size_t>(1 + 2 * i)] = values[static_cast<size_t>(i)];
  Tensor base = Tensor::from_vector(spread, {2 * count + 1}, tensor.dtype());
  Strides strides(shape.size(), 2);
  return Tensor::alias(base, shape, strides, 1);
}

::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected, double rtol,
                                     double atol) {
  std::vector<double> got = actual.to_vector<double>();
  if (got.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << got.size() << " vs expected " << expected.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    bool both_nan = std::isnan(got[i]) && std::isnan(expected[i]);
    bool both_same_inf = std::isinf(got[i]) && got[i] == expected[i];
    if (both_nan || both_same_inf) continue;
    if (!(std::abs(got[i] - expected[i]) <= atol + rtol * std::abs(expected[i]))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", expected " << expected[i]
                                           << " (rtol " << rtol << ", atol " << atol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " vs expected "
                                         << shape_str(expected.shape());
  }
  return all_close(actual, expected.to_vector<double>(), rtol, atol);
}

namespace {

double weighted_sum(const std::vector<Tensor>& outputs, const std::vector<Tensor>& cotangents) {
  double total = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!cotangents[i].defined()) continue;
    std::vector<double> out = outputs[i].to_vector<double>();
    std::vector<double> weights = cotangents[i].to_vector<double>();
    for (size_t j = 0; j < out.size(); ++j) total += out[j] * weights[j];
  }
  return total;
}

}  // namespace

::testing::AssertionResult check_vjp(const std::string& op_name, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                     double rel_tol, double eps) {
  const OpDef& op = builtin_registry().get(op_name);
  std::vector<Tensor> outputs = call(op, inputs, attrs);
  std::vector<Tensor> cotangents;
  for (size_t i = 0; i < outputs.size(); ++i) {
    cotangents.push_back(
        is_floating(outputs[i].dtype()) ? random_tensor(outputs[i].shape(), outputs[i].dtype(), 1000 + i) : Tensor());
  }
  Attrs filled = check_call(op, inputs, attrs);
  VjpContext ctx{inputs, outputs, cotangents, filled};
  std::vector<Tensor> grads = vjp_of(op)(ctx);
  if (grads.size() != inputs.size()) {
    return ::testing::AssertionFailure() << op_name << ": VJP returned " << grads.size() << " gradients for "
                                         << inputs.size() << " inputs";
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_floating(inputs[i].dtype())) continue;
    if (!grads[i].defined()) {
      return ::testing::AssertionFailure() << op_name << ": no gradient for floating input " << i;
    }
    if (grads[i].shape() != inputs[i].shape()) {
      return ::testing::AssertionFailure()
             << op_name << ": gradient " << i << " has shape " << shape_str(grads[i].shape()) << ", input has "
             << shape_str(inputs[i].shape());
    }
    std::vector<double> analytic = grads[i].to_vector<double>();
    std::vector<double> base = inputs[i].to_vector<double>();
    std::vector<double> numeric(base.size());
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<Tensor> shifted = inputs;
      std::vector<double> plus = base, minus = base;
      plus[j] += eps;
      minus[j] -= eps;
      shifted[i] = Tensor::from_vector(plus, inputs[i].shape(), inputs[i].dtype());
      double f_plus = weighted_sum(call(op, shifted, attrs), cotangents);
      shifted[i] = Tensor::from_vector(minus, inputs[i].shape(), inputs[i].dtype());
      double f_minus = weighted_sum(call(op, shifted, attrs), cotangents);
      numeric[j] = (f_plus - f_minus) / (2 * eps);
    }
    double diff = 0, norm_a = 0, norm_n = 0;
    for (size_t j = 0; j < base.size(); ++j) {
      diff += (analytic[j] - numeric[j]) * (analytic[j] - numeric[j]);
      norm_a += analytic[j] * analytic[j];
      norm_n += numeric[j] * numeric[j];
    }
    double rel = std::sqrt(diff) / std::max({std::sqrt(norm_a), std::sqrt(norm_n), 1e-300});
    if (!(rel <= rel_tol)) {
      std::ostringstream detail;
      detail << op_name << ": VJP for input " << i << " has relative error " << rel << " > " << rel_tol
             << "\n  analytic: " << grads[i] << "\n  numeric:  " << Tensor::from_vector(numeric, inputs[i].shape());
      return ::testing::AssertionFailure() << detail.str();
    }
  }
  return ::testing::AssertionSuccess();
}

std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::string temp_path(const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string prefix = test != nullptr ? std::string(test->test_suite_name()) + "." + test->name() : "plan";
  return ::testing::TempDir() + "parallax-" + std::to_string(getpid()) + "-" + prefix + "-" + name;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace px::testing

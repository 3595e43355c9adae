#pragma once
// Helpers of the process-group tests: a launch that cannot hang the suite, seeded inputs
// of every dtype, and single-threaded references for the collectives.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/dist/process_group.h"

namespace px::testing {

// launch() on the threads backend, from another thread. A launch still running after `limit`
// is a hang: a hung thread cannot be cancelled, so the process reports it and aborts (the
// test fails instead of blocking CI). Rethrows what launch() throws.
inline void launch_with_watchdog(int world_size, const std::function<void(int, dist::ProcessGroup&)>& fn,
                                 std::chrono::seconds limit = std::chrono::seconds(30)) {
  auto done =
      std::async(std::launch::async, [&] { dist::launch(world_size, fn, {.backend = dist::Backend::Threads}); });
  if (done.wait_for(limit) == std::future_status::timeout) {
    std::fprintf(stderr, "launch(%d ranks) still running after %lld s: a collective hangs\n", world_size,
                 static_cast<long long>(limit.count()));
    std::abort();
  }
  done.get();
}

// Deterministic values of `dtype`: floats in [-4, 4) (exact in bfloat16 only after rounding),
// integers in [-1000, 1000], bools half true.
inline Tensor make_input(DType dtype, int64_t numel, uint64_t seed) {
  std::mt19937_64 engine(seed * 7919 + 17);
  std::vector<double> values(static_cast<size_t>(numel));
  for (double& v : values) {
    switch (dtype) {
      case DType::Float32:
      case DType::Float64:
      case DType::BFloat16:
        v = std::uniform_real_distribution<double>(-4.0, 4.0)(engine);
        break;
      case DType::Int64:
        v = static_cast<double>(std::uniform_int_distribution<int>(-1000, 1000)(engine));
        break;
      case DType::Bool:
        v = static_cast<double>(engine() % 2);
        break;
    }
  }
  return Tensor::from_vector(values, {numel}, dtype);
}

inline int64_t nbytes(const Tensor& t) { return t.numel() * dtype_size(t.dtype()); }

// Elements [index * count, (index + 1) * count) of a contiguous 1-D tensor, copied.
inline Tensor chunk(const Tensor& t, int64_t index, int64_t count) {
  Tensor out = Tensor::empty({count}, t.dtype());
  const int64_t size = dtype_size(t.dtype());
  if (count > 0)
    std::memcpy(out.raw_data(), static_cast<const std::byte*>(t.raw_data()) + index * count * size,
                static_cast<size_t>(count * size));
  return out;
}

inline Tensor concat(const std::vector<Tensor>& parts) {
  int64_t total = 0;
  for (const Tensor& p : parts) total += p.numel();
  Tensor out = Tensor::empty({total}, parts.at(0).dtype());
  auto* cursor = static_cast<std::byte*>(out.raw_data());
  for (const Tensor& p : parts) {
    if (p.numel() > 0) std::memcpy(cursor, p.raw_data(), static_cast<size_t>(nbytes(p)));
    cursor += nbytes(p);
  }
  return out;
}

namespace detail {
template <class T>
struct Wide {
  using type = T;
};
template <>
struct Wide<BFloat16> {
  using type = float;
};

template <class T>
Tensor reduce_typed(const std::vector<Tensor>& inputs, ReduceOp op) {
  using W = typename Wide<T>::type;
  const int64_t n = inputs.at(0).numel();
  Tensor out = Tensor::empty({n}, inputs[0].dtype());
  for (int64_t i = 0; i < n; ++i) {
    W acc = static_cast<W>(inputs[0].data<T>()[i]);
    for (size_t r = 1; r < inputs.size(); ++r) {
      const W v = static_cast<W>(inputs[r].data<T>()[i]);
      if constexpr (std::is_same_v<T, bool>) {
        acc = op == ReduceOp::Min ? (acc && v) : (acc || v);
      } else {
        switch (op) {
          case ReduceOp::Sum:
          case ReduceOp::Avg:
            acc = acc + v;
            break;
          case ReduceOp::Max:
            acc = acc > v ? acc : v;
            break;
          case ReduceOp::Min:
            acc = acc < v ? acc : v;
            break;
        }
      }
    }
    if constexpr (!std::is_same_v<T, bool>) {
      if (op == ReduceOp::Avg) acc = acc / static_cast<W>(inputs.size());
    }
    out.data<T>()[i] = T(acc);
  }
  return out;
}
}  // namespace detail

// Element i := inputs[0][i] op inputs[1][i] op ... in rank order, in the backend's arithmetic
// (bfloat16 through float32, rounded once; Avg = Sum / n; bool or / and).
inline Tensor reduce_reference(const std::vector<Tensor>& inputs, ReduceOp op) {
  return visit_dtype(inputs.at(0).dtype(), [&](auto zero) { return detail::reduce_typed<decltype(zero)>(inputs, op); });
}

// Same dtype, same element count and the same bytes.
inline ::testing::AssertionResult same_bytes(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype() || actual.numel() != expected.numel()) {
    return ::testing::AssertionFailure() << "got " << actual.meta_info().str() << ", expected "
                                         << expected.meta_info().str();
  }
  const auto* a = static_cast<const std::byte*>(actual.raw_data());
  const auto* e = static_cast<const std::byte*>(expected.raw_data());
  const int64_t size = dtype_size(actual.dtype());
  for (int64_t i = 0; i < actual.numel(); ++i) {
    if (std::memcmp(a + i * size, e + i * size, static_cast<size_t>(size)) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << actual.numel() << ": got " << element_as_double(actual, i) << ", expected "
             << element_as_double(expected, i);
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace px::testing

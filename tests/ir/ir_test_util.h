#pragma once
// Helpers for the IR tests: metas, builtin ops by name, and catching an error's text.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/ir/graph.h"
#include "parallax/ops/registry.h"

namespace px::ir::testing {

using Ints = std::vector<int64_t>;

inline TensorMeta f32(Shape shape) { return {std::move(shape), DType::Float32}; }
inline TensorMeta f64(Shape shape) { return {std::move(shape), DType::Float64}; }
inline TensorMeta i64(Shape shape) { return {std::move(shape), DType::Int64}; }

inline const OpDef& op(std::string_view name) { return builtin_registry().get(name); }

// The message of the E that `fn` throws; a test failure (and "") if it throws nothing or something else.
template <class E>
std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& error) {
    return error.what();
  } catch (const std::exception& other) {
    ADD_FAILURE() << "threw a different error: " << other.what();
    return "";
  }
  ADD_FAILURE() << "threw nothing";
  return "";
}

}  // namespace px::ir::testing

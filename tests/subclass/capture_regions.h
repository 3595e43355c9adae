#pragma once
// The scenario's regions for the capture suites, and a runner that executes a region eagerly or
// through a compiled program captured from the actual inputs right before its first use.
//
//   masking: region A = embedding(weight, idx) stashes the mask on idx;
//            region B = sum(mul(rows, idx), {1}) applies the mask and clears it.
//   scaled:  region A = matmul(x, w) and region B = sum(mul(y, w), {1}); whichever runs first
//            computes and caches w's scale, the other reuses it.

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "parallax/capture/capture.h"
#include "parallax/ops/linalg.h"
#include "subclass/test_subclasses.h"

namespace px::subclass_test {

using Region = std::function<Tensor(const Tensor&, const Tensor&)>;

inline Tensor masking_a(const Tensor& weight, const Tensor& idx) { return px::embedding(weight, idx); }
inline Tensor masking_b(const Tensor& rows, const Tensor& idx) { return px::sum(px::mul(rows, idx), {1}); }
inline Tensor scaled_a(const Tensor& x, const Tensor& w) { return px::matmul(x, w); }
inline Tensor scaled_b(const Tensor& y, const Tensor& w) { return px::sum(px::mul(y, w), {1}); }

enum class Mode : uint8_t { Eager, Compiled };
inline std::string mode_name(Mode mode) { return mode == Mode::Eager ? "eager" : "compiled"; }

inline CaptureOptions recompiling() {
  CaptureOptions options;
  options.on_guard_failure = CaptureOptions::OnGuardFailure::Recompile;
  return options;
}

inline std::vector<std::string> strings_of(const std::vector<InputDescriptor>& descriptors) {
  std::vector<std::string> out;
  for (const InputDescriptor& d : descriptors) out.push_back(d.str());
  return out;
}
inline std::vector<std::string> strings_of(const std::vector<OutputDescriptor>& descriptors) {
  std::vector<std::string> out;
  for (const OutputDescriptor& d : descriptors) out.push_back(d.str());
  return out;
}

// Captures `region` on (a, b) and checks that capture left every subclass input exactly as it was
// (the same inner tensor objects, presence and metadata).
inline CapturedProgram capture_region(const Region& region, const Tensor& a, const Tensor& b,
                                      CaptureOptions options = {}) {
  std::vector<std::pair<Tensor, SubclassState>> before;
  for (const Tensor& input : {a, b}) {
    if (input.is_subclass()) before.emplace_back(input, snapshot(input));
  }
  CapturedProgram program = px::capture(region, std::make_tuple(a, b), std::move(options));
  for (const auto& [input, state] : before) EXPECT_TRUE(unchanged_since(input, state)) << "capture changed an input";
  return program;
}

// Runs `region` on (a, b): eagerly, or through `program`, captured on first use.
inline Tensor run_region(Mode mode, const Region& region, std::optional<CapturedProgram>& program, const Tensor& a,
                         const Tensor& b, const CaptureOptions& options = {}) {
  if (mode == Mode::Eager) return region(a, b);
  if (!program) program.emplace(capture_region(region, a, b, options));
  return program->call<Tensor>(a, b);
}

}  // namespace px::subclass_test

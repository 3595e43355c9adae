#pragma once
// Test subclasses for the subclass suites (header-only: tests/CMakeLists globs *_test.cpp only).
//
//   ScaledTensor  - float8-style: `data`, and `scale` computed (amax of |data|) on first use and
//                   cached on the instance; every use quantize-dequantizes (data / scale) * scale.
//   MaskingTensor - imitates DTensor's MaskPartial over int64 indices: embedding (region A) computes
//                   the mask of indices outside [lo, hi), stashes it on the index tensor; mul (region B)
//                   applies the stashed mask and clears it.
//   Nested        - wraps one tensor (plain or a subclass) and forwards every op to it.
// Both ScaledTensor and MaskingTensor mutate the instances they are given, which is what capture must
// detect, unwind, output and replay. Plus state_of / expect_same_state to compare worlds.

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/reduction.h"
#include "parallax/ops/shape.h"
#include "parallax/subclass/subclass.h"

namespace px::subclass_test {

// The attribute `name` of `state` (undefined when absent); ValueError when the state lacks it.
inline Tensor attribute_of(const SubclassState& state, std::string_view name, std::string_view type) {
  for (const auto& [attribute, tensor] : state.inner) {
    if (attribute == name) return tensor;
  }
  throw ValueError(std::string(type) + ".unflatten: no attribute '" + std::string(name) + "' in the state");
}

// ---------------------------------------------------------------------------------------------
// ScaledTensor

class ScaledTensor : public TensorSubclass {
 public:
  ScaledTensor(Tensor data, Tensor scale, bool scaled)
      : data_(std::move(data)), scale_(std::move(scale)), scaled_(scaled) {}

  std::string type_name() const override { return "ScaledTensor"; }

  SubclassState flatten() const override {
    return {{{"data", data_}, {"scale", scale_}}, Tree::dict({{"scaled", Tree::boolean(scaled_)}})};
  }

  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<ScaledTensor>(attribute_of(state, "data", "ScaledTensor"),
                                          attribute_of(state, "scale", "ScaledTensor"),
                                          state.metadata.at("scaled").as_bool());
  }

  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) override {
    std::vector<Tensor> unwrapped;
    unwrapped.reserve(args.size());
    for (const Tensor& arg : args) {
      ScaledTensor* scaled = subclass_as<ScaledTensor>(arg);
      unwrapped.push_back(scaled ? scaled->dequantized() : arg);
    }
    return px::call(op, unwrapped, attrs);
  }

  const Tensor& data() const { return data_; }
  const Tensor& scale() const { return scale_; }
  bool scaled() const { return scaled_; }

 private:
  // Computes and caches the scale on first use (a mutation of this instance), then reuses it.
  Tensor dequantized() {
    if (!scale_.defined()) {
      scale_ = px::amax(px::abs(data_));
      scaled_ = true;
    }
    return px::mul(px::div(data_, scale_), scale_);
  }

  Tensor data_;
  Tensor scale_;
  bool scaled_ = false;
};

inline Tensor make_scaled(Tensor data, Tensor scale = Tensor(), bool scaled = false) {
  TensorMeta meta = data.meta_info();
  return make_subclass_tensor(std::make_shared<ScaledTensor>(std::move(data), std::move(scale), scaled),
                              std::move(meta));
}

// ---------------------------------------------------------------------------------------------
// MaskingTensor

class MaskingTensor : public TensorSubclass {
 public:
  MaskingTensor(Tensor data, Tensor mask, int64_t lo, int64_t hi, std::string state)
      : data_(std::move(data)), mask_(std::move(mask)), lo_(lo), hi_(hi), state_(std::move(state)) {}

  std::string type_name() const override { return "MaskingTensor"; }

  SubclassState flatten() const override {
    return {{{"data", data_}, {"mask", mask_}},
            Tree::dict({{"lo", Tree::integer(lo_)}, {"hi", Tree::integer(hi_)}, {"state", Tree::string(state_)}})};
  }

  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<MaskingTensor>(
        attribute_of(state, "data", "MaskingTensor"), attribute_of(state, "mask", "MaskingTensor"),
        state.metadata.at("lo").as_int(), state.metadata.at("hi").as_int(), state.metadata.at("state").as_string());
  }

  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs&) override {
    bool self_second = args.size() == 2 && subclass_as<MaskingTensor>(args[1]) == this && !args[0].is_subclass();
    if (op.name == "embedding") {
      if (!self_second) throw ValueError("MaskingTensor: embedding takes a plain weight and the MaskingTensor");
      return {stash(args[0])};
    }
    if (op.name == "mul") {
      if (!self_second) throw ValueError("MaskingTensor: mul takes plain values and the MaskingTensor");
      return {release(args[0])};
    }
    throw ValueError("MaskingTensor: op '" + op.name + "' is not supported");
  }

  const Tensor& data() const { return data_; }
  const Tensor& mask() const { return mask_; }
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  const std::string& state() const { return state_; }

 private:
  // Region A: the rows of the local shard [lo, hi) of the weight; out-of-range indices read row 0
  // and are remembered in the stashed mask.
  Tensor stash(const Tensor& weight) {
    if (state_ == "stashed") throw ValueError("MaskingTensor: a mask is already stashed");
    Tensor below = px::lt(data_, px::full_like(data_, static_cast<double>(lo_)));
    Tensor above = px::ge(data_, px::full_like(data_, static_cast<double>(hi_)));
    Tensor mask = px::where(below, below, above);  // below || above
    Tensor local = px::where(mask, px::zeros_like(data_), px::sub(data_, static_cast<double>(lo_)));
    Tensor rows = px::embedding(weight, local);
    mask_ = mask;
    state_ = "stashed";
    return rows;
  }

  // Region B: zeroes the rows of masked indices and releases the mask.
  Tensor release(const Tensor& values) {
    if (state_ != "stashed") throw ValueError("MaskingTensor: no mask stashed");
    Tensor out = px::where(px::unsqueeze(mask_, -1), px::zeros_like(values), values);
    mask_ = Tensor();
    state_ = "plain";
    return out;
  }

  Tensor data_;
  Tensor mask_;
  int64_t lo_ = 0;
  int64_t hi_ = 0;
  std::string state_ = "plain";
};

inline Tensor make_masking(Tensor indices, int64_t lo, int64_t hi) {
  TensorMeta meta = indices.meta_info();
  return make_subclass_tensor(std::make_shared<MaskingTensor>(std::move(indices), Tensor(), lo, hi, "plain"),
                              std::move(meta));
}

// ---------------------------------------------------------------------------------------------
// Nested: forwards every op to its inner tensor (which may itself be a subclass).

class Nested : public TensorSubclass {
 public:
  explicit Nested(Tensor inner) : inner_(std::move(inner)) {}

  std::string type_name() const override { return "Nested"; }
  SubclassState flatten() const override { return {{{"inner", inner_}}, Tree::none()}; }
  std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const override {
    return std::make_shared<Nested>(attribute_of(state, "inner", "Nested"));
  }
  std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) override {
    std::vector<Tensor> unwrapped;
    unwrapped.reserve(args.size());
    for (const Tensor& arg : args) {
      Nested* nested = subclass_as<Nested>(arg);
      unwrapped.push_back(nested ? nested->inner_ : arg);
    }
    return px::call(op, unwrapped, attrs);
  }

  const Tensor& inner() const { return inner_; }

 private:
  Tensor inner_;
};

inline Tensor make_nested(Tensor inner) {
  TensorMeta meta = inner.meta_info();
  return make_subclass_tensor(std::make_shared<Nested>(std::move(inner)), std::move(meta));
}

// ---------------------------------------------------------------------------------------------
// Comparing states

// `ScaledTensor{data=Tensor(...), scale=absent, metadata={"scaled": false}}`; nested subclasses recurse.
inline std::string state_of(const Tensor& tensor) {
  if (!tensor.defined()) return "absent";
  if (!tensor.is_subclass()) return to_string(tensor);
  const TensorSubclass& instance = subclass_of(tensor);
  SubclassState state = instance.flatten();
  std::ostringstream os;
  os << instance.type_name() << "{";
  for (const auto& [name, inner] : state.inner) os << name << "=" << state_of(inner) << ", ";
  os << "metadata=" << state.metadata.str() << "}";
  return os.str();
}

// Same dtype, shape and bytes (compiled and eager run the same kernels on the same values).
inline ::testing::AssertionResult bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) {
    return ::testing::AssertionFailure() << "one tensor is absent: " << state_of(a) << " vs " << state_of(b);
  }
  if (!a.defined()) return ::testing::AssertionSuccess();
  if (a.is_subclass() || b.is_subclass()) {
    return ::testing::AssertionFailure() << "bitwise_equal on a subclass tensor: " << state_of(a) << " vs "
                                         << state_of(b);
  }
  if (!(a.meta_info() == b.meta_info())) {
    return ::testing::AssertionFailure() << "metas differ: " << a.meta_info().str() << " vs " << b.meta_info().str();
  }
  Tensor ca = px::contiguous(a);
  Tensor cb = px::contiguous(b);
  auto bytes = static_cast<size_t>(a.meta_info().nbytes());
  if (bytes != 0 && std::memcmp(ca.raw_data(), cb.raw_data(), bytes) != 0) {
    return ::testing::AssertionFailure() << "values differ:\n  " << to_string(a) << "\n  " << to_string(b);
  }
  return ::testing::AssertionSuccess();
}

// Same subclass type, attribute names, presence, metadata and inner values (bitwise), recursively;
// plain tensors compare bitwise.
inline ::testing::AssertionResult same_state(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || !a.is_subclass() || !b.is_subclass()) return bitwise_equal(a, b);
  if (!(a.meta_info() == b.meta_info())) {
    return ::testing::AssertionFailure() << "outer metas differ: " << a.meta_info().str() << " vs "
                                         << b.meta_info().str();
  }
  const TensorSubclass& ia = subclass_of(a);
  const TensorSubclass& ib = subclass_of(b);
  auto differ = [&](const std::string& what) {
    return ::testing::AssertionFailure() << what << "\n  " << state_of(a) << "\n  " << state_of(b);
  };
  if (ia.type_name() != ib.type_name()) return differ("types differ");
  SubclassState sa = ia.flatten();
  SubclassState sb = ib.flatten();
  if (!(sa.metadata == sb.metadata)) return differ("metadata differ");
  if (sa.inner.size() != sb.inner.size()) return differ("attribute counts differ");
  for (size_t i = 0; i < sa.inner.size(); ++i) {
    if (sa.inner[i].first != sb.inner[i].first) return differ("attribute names differ");
    ::testing::AssertionResult inner = same_state(sa.inner[i].second, sb.inner[i].second);
    if (!inner) return differ("attribute '" + sa.inner[i].first + "' differs: " + inner.message());
  }
  return ::testing::AssertionSuccess();
}

inline void expect_same_state(const Tensor& a, const Tensor& b) { EXPECT_TRUE(same_state(a, b)); }

// The instance's state right now (inner tensor handles and metadata), for identity checks later.
inline SubclassState snapshot(const Tensor& tensor) { return subclass_of(tensor).flatten(); }

// `tensor` holds exactly `before`: the same inner tensor objects (identity), presence and metadata.
inline ::testing::AssertionResult unchanged_since(const Tensor& tensor, const SubclassState& before) {
  SubclassState now = subclass_of(tensor).flatten();
  auto differ = [&](const std::string& what) {
    return ::testing::AssertionFailure() << what << "; now " << state_of(tensor);
  };
  if (!(now.metadata == before.metadata)) {
    return differ("metadata changed from " + before.metadata.str() + " to " + now.metadata.str());
  }
  if (now.inner.size() != before.inner.size()) return differ("attribute count changed");
  for (size_t i = 0; i < now.inner.size(); ++i) {
    const Tensor& was = before.inner[i].second;
    const Tensor& is = now.inner[i].second;
    if (now.inner[i].first != before.inner[i].first) return differ("attribute names changed");
    if (was.defined() != is.defined() || (was.defined() && !was.same(is))) {
      return differ("attribute '" + now.inner[i].first + "' is not the tensor it held before");
    }
  }
  return ::testing::AssertionSuccess();
}

// A second subclass tensor holding a copy of `tensor`'s instance (sharing its inner tensors): the
// state to compare against later, whatever happens to `tensor`.
inline Tensor copy_of(const Tensor& tensor) {
  return make_subclass_tensor(subclass_of(tensor).unflatten(subclass_of(tensor).flatten()), tensor.meta_info());
}

}  // namespace px::subclass_test

#pragma once
// OpDef: everything Parallax knows about one op, in one place. Every transform
// (meta inference, kernels, VJP, cost, sharding) asks the op for its facet;
// nothing switches on op names.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/shape.h"
#include "parallax/core/tensor.h"
#include "parallax/ops/attrs.h"

namespace px {

struct InputSpec {
  std::string name;
  bool optional = false;  // may be left off (only trailing inputs)
  bool variadic = false;  // the last input repeats (cat, stack): one or more tensors
};

struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // absent: the attribute is required
};

// FLOPs and bytes moved for given shapes: what the roofline model reads.
struct OpCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
};

struct VjpContext {
  const std::vector<Tensor>& inputs;
  const std::vector<Tensor>& outputs;
  // One per output; an undefined Tensor means no gradient flows into that output.
  const std::vector<Tensor>& grad_outputs;
  const Attrs& attrs;
};

// One sharding strategy for a single mesh dimension: a placement for every
// input and every output. dtensor/ expands these to N-D meshes.
struct ShardingStrategy {
  std::vector<Placement> inputs;
  std::vector<Placement> outputs;
};

using InferFn = std::function<std::vector<TensorMeta>(const std::vector<TensorMeta>& inputs, const Attrs& attrs)>;
// Runs on dense CPU tensors; returns fresh outputs or (for views) aliases of an input.
using KernelFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Attrs& attrs)>;
// Gradient for every input (undefined where none flows), written with px ops so it traces.
using VjpFn = std::function<std::vector<Tensor>(const VjpContext& ctx)>;
using CostFn = std::function<OpCost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                                    const Attrs& attrs)>;
using ShardingRuleFn =
    std::function<std::vector<ShardingStrategy>(const std::vector<TensorMeta>& inputs, const Attrs& attrs)>;

// Properties that passes read instead of op names.
struct OpTraits {
  bool elementwise = false;
  bool view = false;  // output 0 aliases input 0's storage
  // Every op is a pure function of its inputs and attributes (random ops take
  // their seed and offset as attributes), so CSE may merge any two identical nodes.
};

struct OpDef {
  std::string name;
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attrs;
  InferFn infer;
  KernelFn kernel;
  VjpFn vjp;  // empty: not differentiable (argmax, comparisons); asking for it raises UnsupportedOp
  CostFn cost;
  ShardingRuleFn sharding;  // empty until the DTensor work fills it; asking raises UnsupportedOp
  OpTraits traits;

  // "matmul(Tensor a, Tensor b) -> Tensor"-style text for docs and errors.
  std::string signature() const;
  int64_t min_inputs() const;
  // -1 when variadic.
  int64_t max_inputs() const;
};

}  // namespace px

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
// input and every output. dtensor/ expands these to N-D meshes (one strategy per
// mesh dim, combined) and keeps a combination only when the local op, run on each
// rank's local input shapes, gives exactly the local output shapes the output
// placements call for: uneven shards that break a rule are caught there. (For an op
// with a `local` facet, that function itself runs on meta tensors for the check.)
//
// Rule contract: the list starts with the all-Replicate strategy (which eager
// dispatch prefers on a tie), lists each distinct strategy once, and covers every
// input given (absent optional inputs are not in the list). A strategy with a
// MaskPartial output needs the op's `local` facet to produce its mask.
struct ShardingStrategy {
  std::vector<Placement> inputs;
  std::vector<Placement> outputs;
  friend bool operator==(const ShardingStrategy&, const ShardingStrategy&) = default;
};

// What an op sees when it runs on the local shards of distributed tensors.
// Offsets say where each local shard starts in its global tensor (all zeros
// when replicated or partial on every mesh dim).
struct LocalContext {
  const std::vector<TensorMeta>& global_inputs;
  const std::vector<TensorMeta>& global_outputs;
  const std::vector<TensorMeta>& local_inputs;
  const std::vector<TensorMeta>& local_outputs;  // what each output's local shard must be
  const std::vector<Shape>& input_offsets;
  const std::vector<Shape>& output_offsets;
  // Per input and per output, one placement per mesh dim.
  const std::vector<std::vector<Placement>>& input_placements;
  const std::vector<std::vector<Placement>>& output_placements;
};

// The local result of an op: its outputs and, per output, the mask a MaskPartial
// output carries (undefined where there is none). A mask is a bool tensor that
// broadcasts against the output: true where this rank's value is not valid.
struct LocalResult {
  std::vector<Tensor> outputs;
  std::vector<Tensor> masks;
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
// The attributes the op takes on local shards (a reshape's target shape becomes the local one).
// Pure: it runs on metas when strategies are checked, and before every local call.
using LocalizeAttrsFn = std::function<Attrs(const Attrs& attrs, const LocalContext& ctx)>;
// Runs the op on local shards when the op on local inputs is not the answer (an embedding over a
// row-sharded table shifts and masks its indices). Called with localized attributes.
using LocalFn =
    std::function<LocalResult(const std::vector<Tensor>& local_inputs, const Attrs& attrs, const LocalContext& ctx)>;

// Properties that passes read instead of op names.
struct OpTraits {
  bool elementwise = false;
  bool view = false;  // output 0 aliases input 0's storage
  // Communicates with other ranks (dist/comm_ops.h): its kernel needs a bound process group.
  bool collective = false;
  // Its FLOPs run on matrix units (tensor cores, GEMM kernels): the planner's roofline prices
  // them at the device's matmul peak instead of its vector peak (plan/device_profile.h).
  bool matmul_like = false;
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
  ShardingRuleFn sharding;         // empty: the op cannot run on distributed tensors (UnsupportedOp)
  LocalizeAttrsFn localize_attrs;  // empty: the attributes as given
  LocalFn local;                   // empty: the op itself on the local inputs
  OpTraits traits;

  // "matmul(Tensor a, Tensor b) -> Tensor"-style text for docs and errors.
  std::string signature() const;
  int64_t min_inputs() const;
  // -1 when variadic.
  int64_t max_inputs() const;
};

}  // namespace px

#pragma once
// build_problem: the sharding problem of one training step, from a joint forward+backward
// graph (autodiff/export.h) and a device mesh. Solving it (solver.h) picks a placement for
// every graph input and a strategy (dtensor/strategy.h) for every graph node; decode() turns
// that choice back into placements.
//
// Problem nodes and their strategies:
//   - one per graph input: every combination of Replicate / Shard(d) per mesh dim in which no
//     rank holds an empty shard of a non-empty dim (torch.chunk sizes, nesting as in
//     dist/sharding.h). Cost 0, except for a parameter with a gradient: the optimizer's update
//     of its local shard (optimizer_update_cost, priced as op "optimizer_update" like any op),
//     which every rank holding a replica repeats, so sharding parameters (ZeRO, FSDP) saves it.
//   - one per graph node: expand_strategies, less those that leave some rank an empty shard of
//     a non-empty input or output dim (they cost what Replicate costs and only slow solvers).
//     Cost: the roofline time (device_profile.h) of the local op on the largest shard (mesh
//     coordinate 0 under torch.chunk), where its local metas and attributes come from
//     plan_local_call; for an op that localizes its attributes, whose rank call depends on where
//     the block sits (a query-split causal attention: the last rank's queries see the most
//     keys), the slower of the first and the last coordinate. An op with no inputs and no
//     sharding rule (the factories full, arange, uniform, normal: scalars and index ranges in a
//     training graph) runs whole on every rank: its one strategy is all-Replicate.
// Costs are seconds per training step; usages are bytes per device.
//
// Edges: one per (producer, consumer) pair of problem nodes, pricing with redistribute_cost
// (on PlanOptions' topology) the move of every value the producer gives the consumer from the
// producer's output placement under s_u to the consumer's input placement under s_v (summed
// over values and over the graph edges a clustered pair stands for). Each parameter's
// gradient output also gets an edge from the node producing it to the parameter's node,
// pricing its redistribution to the parameter's placement: the optimizer updates a parameter
// shard with the gradient shard placed like it, so data parallelism pays an all-reduce
// (Partial -> Replicate) and FSDP a reduce-scatter (Partial -> Shard). Edges are stored with
// from < to (the matrix transposed where needed); a pair that clustering maps onto one node
// (a layer's output feeding the same op of the next layer) costs the matrix's diagonal,
// folded into that node's costs. Each consumer pays its own redistribution: a value read by two
// consumers in the same foreign placement is moved twice (FSDP gathers a weight for the forward
// and again for the backward), as in AutoParallel's formulation.
//
// Memory, per device (usage):
//   - a parameter: its local bytes, plus, when it has a gradient, as many bytes again for the
//     gradient and PlanOptions::optimizer_states states (AdamW: 2) of optimizer_state_dtype,
//     all sharded like the parameter; live over the whole step. A buffer: its local bytes,
//     the whole step. User inputs and tangents: their local bytes, from the start to their last
//     use.
//   - a graph node: the local bytes of its outputs (a view's output 0 aliases its input and
//     costs nothing), live from the node to the last use of any output (a view's uses extend
//     its base's life). A forward output stays live to the end of the step; a parameter's
//     gradient does not (the parameter's node holds its redistributed copy).
//   The problem's usages hold each parameter's gradient for the whole step: a linear, safe
//   bound the solvers check the budget against. A rank holds a gradient only from the node that
//   makes it on (lowering moves it to its parameter's placement there), so the peak a plan
//   predicts (predicted_peak) counts it from that step, which is what the executor measures.
// Time steps: step 0 holds the graph inputs, step i + 1 graph node i; the problem's intervals
// are these steps, compressed under clustering (below).
//
// Repeated-layer clustering (PlanOptions::cluster_layers): a node whose module path has an
// integer component ("layers.3.attention.wq", "gpt.h.3.mlp") belongs to layer 3 of the list
// at the path before it ("layers", "gpt.h"); so does a parameter whose fqn does. Two layers of
// one list are identical when their nodes, in graph order, match one for one (path after the
// index, phase, op, attributes, input and output metas) and their parameters match by name
// after the index and meta. Each set of identical layers is represented by its lowest-index
// layer: a member node of another layer shares the decision variable of the representative
// node at the same position, and a member parameter that of the representative parameter of
// the same name. A problem node then stands for all its members: its costs are the sum of
// theirs (its cost times the member count), and every graph edge is priced between the
// problem nodes of its ends, so edges inside a layer count once per layer and the edges from
// layer k to layer k + 1 become edges between two representative nodes. The problem for 32
// identical layers has the size of the problem for one (plus what lies outside the layers).
// Memory under clustering:
//   - a problem node's usage is its per-copy bytes times its `live_copies`: the largest number
//     of its members live at one time step of the real (unclustered) step;
//   - time is compressed: the steps of non-representative members are removed, and a member's
//     real interval [a, b) maps to [first kept step >= a, last kept step <= b - 1] (empty when
//     it lies wholly within removed steps: its representative's copy repeats it); a problem
//     node is live over the hull of its members' mapped intervals.
//   So memory held across layers (parameters, saved activations, the residual stream) is
//   counted in full wherever it is live (saved activations of all L layers appear together at
//   the start of the backward, as they do in the real step), while one layer's transient
//   tensors are counted once, at the representative layer's steps. The peak found this way is
//   the real peak up to the transients of one layer, conservative in the backward (where the
//   real step frees each layer's saved activations as it goes).
//
// Activation checkpointing (PlanOptions::checkpointing): a candidate is a forward node of a
// repeated layer (a clustered problem node) whose outputs some backward node reads (directly or
// through views) and which is not a view itself. Recomputing it means running it again, on the
// same strategy, right before its first backward reader: its cost is twice its compute and twice
// the transfers into it (its inputs are redistributed again: FSDP gathers the weight again, as
// FSDP2 does after resharding), and its usage is its bytes times `recompute_copies`, the most
// copies live at once when each member lives from its step to its last forward reader and again
// from its first to its last backward reader (usually 1, against the L of keeping all layers').
// Not modelled: an input of a recomputed node that no backward node reads otherwise is assumed
// to end where its own decision says (in the transformers of the zoo every such input is read by
// the backward anyway).
//
// Cost of building: strategies and node costs are computed once per problem node (per
// representative), strategy expansion is cached by (op, attributes, input metas), and
// redistribution costs by (meta, from placements, to placements).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/core/mixed_precision.h"
#include "parallax/core/placement.h"
#include "parallax/dist/comm_cost.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dtensor/strategy.h"
#include "parallax/plan/device_profile.h"
#include "parallax/plan/problem.h"

namespace px::plan {

// Activation checkpointing: which forward values of the repeated layers are kept for the
// backward and which are recomputed there (see "Activation checkpointing" above).
enum class Checkpointing : uint8_t {
  None,       // keep every activation
  Selective,  // keep the outputs of matmuls, linears and attention; recompute the rest (PyTorch's
              // selective op policy)
  Full,       // keep each layer's outputs (what the next layer reads); recompute the rest
  Auto,       // the solver decides per node, with its sharding, under the memory budget
};
std::string_view checkpointing_name(Checkpointing policy);  // "none", "selective", "full", "auto"
// ValueError naming the choices for an unknown name.
Checkpointing parse_checkpointing(std::string_view name);

struct PlanOptions {
  DeviceProfile device = h100();
  // One link profile per mesh dim; empty (no links): cluster_topology(mesh, device).
  dist::MeshTopology topology;
  bool cluster_layers = true;
  // Optimizer state tensors per parameter with a gradient (AdamW: exp_avg and exp_avg_sq),
  // shaped and sharded like it, of this dtype (nullopt: the parameter's).
  // Their update is priced too (optimizer_update_cost).
  int64_t optimizer_states = 2;
  std::optional<DType> optimizer_state_dtype;
  // The mixed-precision policy the program was captured under (capture.h applies its param and
  // output dtypes). Its reduce dtype decides where each parameter's gradient is reduced: a
  // gradient leaves the backward through the cast back to its parameter's (master) dtype, and
  // the reduction (Partial -> Replicate or Shard) happens before that cast when reduce_dtype is
  // the compute dtype, after it when it is the master's. Other pairs are forbidden on the edge
  // into the cast, so the plan reduces where the policy says, and prices it in that dtype.
  MixedPrecisionPolicy precision;
  Checkpointing checkpointing = Checkpointing::None;
  // Per-device memory budget in bytes: the problem's usage_limit (nullopt: none).
  std::optional<double> memory_limit_bytes;
  // The problem's name; empty: "<graph name> on <mesh>".
  std::string name;
};

// What one problem node decides.
struct PlanNode {
  enum class Kind : uint8_t { Input, Op };
  Kind kind = Kind::Op;
  // Graph input indices (Input) or graph node indices (Op) sharing this node's decision; the
  // first is the representative (the lowest layer). One member without clustering.
  std::vector<int64_t> members;
  // Per strategy. An Input node's strategy has no inputs and one output: the input's placements.
  std::vector<NdStrategy> strategies;
  // Per strategy: the compute seconds summed over members (0 for inputs); the problem's node
  // cost is this plus the folded self-edge transfers.
  std::vector<double> compute_seconds;
  // Per strategy: the bytes one member holds per device (for a parameter: the parameter alone,
  // without gradient and optimizer state), before the live_copies factor.
  std::vector<double> local_bytes;
  int64_t live_copies = 1;  // the usage factor (see "Memory under clustering")
  // Activation checkpointing: per strategy, whether the node's outputs are recomputed in the
  // backward (empty: never). Under Checkpointing::Auto a candidate's strategies come twice, kept
  // then recomputed; under Selective and Full each candidate has one of the two.
  std::vector<bool> recompute;
  int64_t recompute_copies = 1;  // the usage factor of a recomputing strategy
  // Input nodes: what the graph input is (Param, Buffer, UserInput, Tangent, SubclassInner).
  InputDescriptor::Kind input_kind = InputDescriptor::Kind::UserInput;
  bool has_gradient = false;  // Input nodes of parameters: a gradient output exists
  // Input nodes with a gradient: per member, the (compressed) time step from which its gradient
  // exists; predicted_peak counts the gradient from there on.
  std::vector<int64_t> gradient_from;
};

// The optimizer's update of a parameter (or a shard of one) of `numel` elements: one elementwise
// pass that reads the parameter, its gradient (same dtype) and `states` state tensors of dtype
// `state` and writes the parameter and the states back; about 4 + 5 * states FLOPs an element
// (AdamW, states 2: decay, two moments, the bias-corrected step). The planner prices it as op
// kOptimizerUpdateOp at the parameter's dtype, so a calibrated profile fits it from measured
// updates (ParallelModule's last_update_seconds) and every other profile takes its roofline.
inline constexpr std::string_view kOptimizerUpdateOp = "optimizer_update";
OpCost optimizer_update_cost(int64_t numel, DType param, DType state, int64_t states);

// A set of identical layers: the list's path ("layers"), the layer indices, the first the
// representative.
struct LayerGroup {
  std::string list_path;
  std::vector<int64_t> layers;
};

// Where a graph value comes from: a problem node and which output of its strategies places it
// (0 for an Input node).
struct ValueSource {
  int64_t node = 0;
  int64_t output = 0;
};

struct PlanProblem {
  ShardingProblem problem;
  std::vector<PlanNode> nodes;           // parallel to problem.nodes
  std::vector<int64_t> input_node;       // per graph input: its problem node
  std::vector<int64_t> op_node;          // per graph node: its problem node
  std::vector<ValueSource> outputs;      // per graph output: what places it
  std::vector<LayerGroup> layer_groups;  // the clustered layer sets (empty without clustering)
  dist::DeviceMesh mesh{{1}};
  dist::MeshTopology topology;  // the one the edges were priced on
  PlanOptions options;
  double build_seconds = 0;  // wall time of build_problem
  // What the builder decided without a rule (factory ops replicated): every plan's notes repeat it.
  std::vector<std::string> notes;
};

// ValueError when the program's descriptors do not match its graph, the topology's dim count
// differs from the mesh's, or the options are invalid (negative optimizer_states, a memory
// limit <= 0, an invalid device profile); UnsupportedOp naming the node (op and module path)
// when a graph node's op has no sharding rule or no sound strategy on this mesh.
PlanProblem build_problem(const JointProgram& program, const dist::DeviceMesh& mesh, const PlanOptions& options = {});

// A choice in graph terms: the placements of every graph input and the strategy of every
// graph node. A parameter's gradient is placed like the parameter.
struct DecodedPlan {
  std::vector<std::vector<Placement>> inputs;  // per graph input, one placement per mesh dim
  std::vector<NdStrategy> nodes;               // per graph node
  // Per graph node: its outputs are recomputed in the backward (empty: none is).
  std::vector<bool> recompute;
};

// ValueError for a choice of the wrong length or a strategy index out of range.
DecodedPlan decode(const PlanProblem& plan, const Choice& choice);

// The memory a rank holds under a choice, each parameter's gradient counted from the step that
// makes it (see "Memory"): its peak, where, and what of it is parameters with their gradients
// and optimizer states. ValueError for a choice of the wrong length.
struct PredictedPeak {
  double bytes = 0;
  int64_t step = 0;
  double parameter_bytes = 0;  // at the peak
};
PredictedPeak predicted_peak(const PlanProblem& plan, const Choice& choice);

// The index of the strategy of graph input `input`'s node with these placements; nullopt when
// there is none (a shard that would leave a rank empty). ValueError for an input out of range.
std::optional<int64_t> find_input_strategy(const PlanProblem& plan, int64_t input,
                                           std::span<const Placement> placements);

// The problem with only the strategies whose flag is set in keep[node] (one flag per strategy
// of every node): costs, usages, names, edge matrices and PlanNode fields are cut alike. What
// constraints and hand-written baselines build on. `kept` (optional) receives, per node, the
// original index of each strategy kept. ValueError naming the node when a node keeps none, or
// when `keep` does not have one flag per strategy.
PlanProblem restrict_strategies(const PlanProblem& plan, const std::vector<std::vector<bool>>& keep,
                                std::vector<std::vector<int64_t>>* kept = nullptr);

}  // namespace px::plan

// Hand-written plans as constraint sets (see plan/baselines.h).

#include "parallax/plan/baselines.h"

#include <algorithm>
#include <array>
#include <future>
#include <set>
#include <string_view>

#include "parallax/core/error.h"

namespace px::plan {

namespace {

enum class Role : uint8_t { Data, Fsdp, Tp };

// Megatron's split of a parameter, from the name of the module that owns it.
enum class TpSplit : uint8_t { Column, Row, Vocab, None };

// Module names (the fqn component before "weight" / "bias") of LLaMA, GPT-2, Hugging Face and the
// MLP model.
constexpr std::array<std::string_view, 13> kColumn{"wq",  "wk",     "wv",     "w1",     "w3",        "c_fc",   "c_attn",
                                                   "fc1", "q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"};
constexpr std::array<std::string_view, 6> kRow{"wo", "w2", "c_proj", "fc2", "o_proj", "down_proj"};
constexpr std::array<std::string_view, 5> kVocab{"tok_embeddings", "wte", "embed_tokens", "output", "lm_head"};

TpSplit tp_split(const InputDescriptor& input, bool& is_bias) {
  is_bias = false;
  for (const std::string& fqn : input.fqns) {
    const size_t last = fqn.rfind('.');
    if (last == std::string::npos) continue;
    is_bias = fqn.substr(last + 1) == "bias";
    const size_t before = fqn.rfind('.', last - 1);
    const std::string module =
        fqn.substr(before == std::string::npos ? 0 : before + 1, last - (before == std::string::npos ? 0 : before + 1));
    auto in = [&](const auto& names) { return std::find(names.begin(), names.end(), module) != names.end(); };
    if (in(kColumn)) return TpSplit::Column;
    if (in(kRow)) return TpSplit::Row;
    if (in(kVocab)) return TpSplit::Vocab;
  }
  return TpSplit::None;
}

// Every mesh dim but the tp dim carries the data-parallel role (DP or FSDP).
std::vector<Role> roles_of(BaselineKind kind, const dist::DeviceMesh& mesh, int64_t tp_dim) {
  const auto ndim = static_cast<size_t>(mesh.ndim());
  switch (kind) {
    case BaselineKind::DataParallel:
      return std::vector<Role>(ndim, Role::Data);
    case BaselineKind::Fsdp:
      return std::vector<Role>(ndim, Role::Fsdp);
    case BaselineKind::TensorParallel: {
      std::vector<Role> roles(ndim, Role::Data);
      roles[static_cast<size_t>(ndim == 1 ? 0 : tp_dim)] = Role::Tp;
      return roles;
    }
    case BaselineKind::FsdpTensorParallel: {
      std::vector<Role> roles(ndim, Role::Fsdp);
      roles[static_cast<size_t>(tp_dim)] = Role::Tp;
      return roles;
    }
    case BaselineKind::Imported:
      break;
  }
  return {};
}

// The first combination (mesh dim 0 varying slowest) of per-dim candidates that the input's node offers.
std::optional<std::vector<Placement>> first_available(const PlanProblem& plan, int64_t input,
                                                      const std::vector<std::vector<Placement>>& candidates) {
  std::vector<size_t> pick(candidates.size(), 0);
  while (true) {
    std::vector<Placement> placements;
    for (size_t d = 0; d < candidates.size(); ++d) placements.push_back(candidates[d][pick[d]]);
    if (find_input_strategy(plan, input, placements)) return placements;
    size_t d = candidates.size();
    while (d > 0) {
      --d;
      if (++pick[d] < candidates[d].size()) break;
      pick[d] = 0;
      if (d == 0) return std::nullopt;
    }
    if (candidates.empty()) return std::nullopt;
  }
}

std::string dims_text(const std::vector<Role>& roles, Role role, const dist::DeviceMesh& mesh) {
  std::string text;
  int64_t devices = 1;
  for (size_t d = 0; d < roles.size(); ++d) {
    if (roles[d] != role) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(d);
    devices *= mesh.size(static_cast<int64_t>(d));
  }
  return "mesh dim" + std::string(text.find(',') == std::string::npos ? " " : "s ") + text + " (" +
         std::to_string(devices) + " devices)";
}

}  // namespace

std::string baseline_name(BaselineKind kind) {
  switch (kind) {
    case BaselineKind::DataParallel:
      return "DP";
    case BaselineKind::Fsdp:
      return "FSDP";
    case BaselineKind::TensorParallel:
      return "TP";
    case BaselineKind::FsdpTensorParallel:
      return "FSDP+TP";
    case BaselineKind::Imported:
      return "imported";
  }
  return "unknown";
}

std::vector<BaselineKind> baseline_kinds(const dist::DeviceMesh& mesh) {
  std::vector<BaselineKind> kinds{BaselineKind::DataParallel, BaselineKind::Fsdp, BaselineKind::TensorParallel};
  if (mesh.ndim() >= 2) kinds.push_back(BaselineKind::FsdpTensorParallel);
  return kinds;
}

Baseline make_baseline(BaselineKind kind, const JointProgram& program, const PlanProblem& plan,
                       const BaselineOptions& options) {
  const dist::DeviceMesh& mesh = plan.mesh;
  const int64_t ndim = mesh.ndim();
  const int64_t tp_dim = options.tp_dim < 0 ? options.tp_dim + ndim : options.tp_dim;
  const int64_t dp_dim = options.dp_dim < 0 ? options.dp_dim + ndim : options.dp_dim;
  if (ndim >= 2 && (tp_dim < 0 || tp_dim >= ndim || dp_dim < 0 || dp_dim >= ndim || tp_dim == dp_dim)) {
    throw ValueError("make_baseline: dp dim " + std::to_string(options.dp_dim) + " and tp dim " +
                     std::to_string(options.tp_dim) + " must be two different dims of " + mesh.str());
  }
  if (kind == BaselineKind::Imported) {
    throw ValueError("make_baseline: an imported plan comes from import_baseline (plan/imported_plan.h)");
  }
  if (kind == BaselineKind::FsdpTensorParallel && ndim < 2) {
    throw ValueError("make_baseline: FSDP+TP needs a mesh of two or more dims (dp x tp), got " + mesh.str());
  }
  if (program.inputs.size() != plan.input_node.size()) {
    throw ValueError("make_baseline: the program is not the one the problem '" + plan.problem.name +
                     "' was built from");
  }
  const std::vector<Role> roles = roles_of(kind, mesh, tp_dim);
  Baseline baseline;
  baseline.kind = kind;
  baseline.name = baseline_name(kind);
  switch (kind) {
    case BaselineKind::DataParallel:
      baseline.description = "data parallel over " + dims_text(roles, Role::Data, mesh) +
                             ": parameters replicated, batch sharded, gradients all-reduced";
      break;
    case BaselineKind::Fsdp:
      baseline.description = "FSDP (ZeRO-3) over " + dims_text(roles, Role::Fsdp, mesh) +
                             ": parameters, gradients and optimizer states sharded on dim 0, batch sharded";
      break;
    case BaselineKind::TensorParallel:
      baseline.description = "Megatron tensor parallel on " + dims_text(roles, Role::Tp, mesh) +
                             ": column-parallel wq/wk/wv/w1/w3 S(0), row-parallel wo/w2 S(1), vocab-parallel "
                             "embedding and output";
      if (ndim >= 2) baseline.description += "; data parallel on " + dims_text(roles, Role::Data, mesh);
      break;
    case BaselineKind::FsdpTensorParallel:
      baseline.description = "Megatron tensor parallel on " + dims_text(roles, Role::Tp, mesh) + ", FSDP on " +
                             dims_text(roles, Role::Fsdp, mesh);
      break;
    case BaselineKind::Imported:
      break;
  }
  std::set<int64_t> done_nodes;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const InputDescriptor& input = program.inputs[i];
    const InputDescriptor::Kind input_kind = input.underlying_kind();
    const TensorMeta& meta = program.graph.meta(program.graph.inputs()[i]);
    std::vector<std::vector<Placement>> candidates(static_cast<size_t>(ndim));
    bool unsplit_on_tp = false;  // a parameter the Megatron pattern does not name, on a tp dim
    if (input_kind == InputDescriptor::Kind::Param) {
      bool is_bias = false;
      const TpSplit split = tp_split(input, is_bias);
      unsplit_on_tp = split == TpSplit::None && std::find(roles.begin(), roles.end(), Role::Tp) != roles.end();
      for (size_t d = 0; d < candidates.size(); ++d) {
        auto& list = candidates[d];
        switch (roles[d]) {
          case Role::Data:
            list = {Replicate{}};
            break;
          case Role::Fsdp:
            for (int64_t dim = 0; dim < meta.ndim(); ++dim) list.push_back(Shard{dim});
            list.push_back(Replicate{});
            break;
          case Role::Tp:
            if (split == TpSplit::Column || split == TpSplit::Vocab) list.push_back(Shard{0});
            if (split == TpSplit::Row && !is_bias) list.push_back(Shard{1});
            list.push_back(Replicate{});
            break;
        }
      }
    } else if (input_kind == InputDescriptor::Kind::UserInput) {
      for (size_t d = 0; d < candidates.size(); ++d) {
        auto& list = candidates[d];
        if (roles[d] != Role::Tp) {
          for (int64_t dim = 0; dim < std::min<int64_t>(meta.ndim(), 2); ++dim) list.push_back(Shard{dim});
        }
        list.push_back(Replicate{});
      }
    } else {
      continue;  // buffers and tangents: the solver places them
    }
    std::vector<Placement> wanted;
    for (const auto& list : candidates) wanted.push_back(list.front());
    std::optional<std::vector<Placement>> placements = first_available(plan, static_cast<int64_t>(i), candidates);
    if (!placements) continue;  // cannot happen: all-Replicate is always offered
    const bool repeat = !done_nodes.insert(plan.input_node[i]).second;
    if (*placements != wanted && !repeat) {
      baseline.notes.push_back(input.str() + " " + meta.str() + ": " + placements_str(wanted) +
                               " would leave a device an empty shard; " + placements_str(*placements) + " instead");
    }
    if (unsplit_on_tp && !repeat) {
      // Norm weights are meant to be replicated; anything else here is a module the pattern does
      // not know, and the report says so rather than replicating it unannounced.
      baseline.notes.push_back(input.str() + " " + meta.str() +
                               ": replicated on the tp dim (its name matches no Megatron column, row or vocab "
                               "module)");
    }
    baseline.constraints.inputs.push_back(InputConstraint{static_cast<int64_t>(i), exactly(*placements)});
  }
  return baseline;
}

std::vector<BaselineResult> solve_baselines(const JointProgram& program, const PlanProblem& plan,
                                            const PlanConstraints& common, const SolveOptions& options,
                                            const BaselineOptions& baseline_options) {
  SolveOptions quiet = options;
  quiet.on_progress = nullptr;  // progress is the solver's plan's; these run beside it
  auto solve_one = [&](BaselineKind kind) {
    BaselineResult result;
    result.baseline = make_baseline(kind, program, plan, baseline_options);
    PlanConstraints constraints = result.baseline.constraints;
    constraints.parameter_memory = common.parameter_memory;
    constraints.memory_budget_bytes = common.memory_budget_bytes;
    constraints.gradients = common.gradients;
    constraints.inputs.insert(constraints.inputs.end(), common.inputs.begin(), common.inputs.end());
    constraints.outputs = common.outputs;
    constraints.nodes = common.nodes;
    try {
      result.plan = solve_plan(program, plan, constraints, quiet, result.baseline.name);
      for (const std::string& note : result.baseline.notes) result.plan->notes.push_back(note);
    } catch (const InfeasiblePlan& error) {
      result.error = error.what();
    }
    return result;
  };
  // Independent problems: each on its own thread (every solver is deterministic for its seed,
  // whatever else runs), results in the kinds' order.
  std::vector<std::future<BaselineResult>> pending;
  for (BaselineKind kind : baseline_kinds(plan.mesh))
    pending.push_back(std::async(std::launch::async, solve_one, kind));
  std::vector<BaselineResult> results;
  for (auto& result : pending) results.push_back(result.get());
  return results;
}

}  // namespace px::plan

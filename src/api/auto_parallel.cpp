#include "parallax/api/auto_parallel.h"

#include <utility>

#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/lower/lower.h"
#include "parallax/ops/factory.h"
#include "parallax/plan/device_profile.h"

namespace px {

namespace {

// Rank 0's bytes (or its error, raised on the other ranks with its own type) on every rank of `world`: a header
// [status, length], then the bytes, one int64 each (the process groups move tensors; plans are small).
std::string broadcast_text(dist::ProcessGroup& world, const std::string& text, bool failed) {
  Tensor header = px::full({2}, 0.0, DType::Int64);
  if (world.rank() == 0) {
    header.data<int64_t>()[0] = failed ? 1 : 0;
    header.data<int64_t>()[1] = static_cast<int64_t>(text.size());
  }
  world.broadcast(header, 0);
  const int64_t length = header.data<int64_t>()[1];
  Tensor bytes = px::full({length}, 0.0, DType::Int64);
  if (world.rank() == 0) {
    for (int64_t i = 0; i < length; ++i) bytes.data<int64_t>()[i] = static_cast<unsigned char>(text[i]);
  }
  world.broadcast(bytes, 0);
  std::string received(static_cast<size_t>(length), '\0');
  for (int64_t i = 0; i < length; ++i) received[static_cast<size_t>(i)] = static_cast<char>(bytes.data<int64_t>()[i]);
  if (header.data<int64_t>()[0] != 0 && world.rank() != 0) {
    // An error arrives as its kind, a newline, then its message, and is raised here as what it was.
    const size_t newline = received.find('\n');
    const std::string kind = newline == std::string::npos ? std::string() : received.substr(0, newline);
    throw_error_of_kind(kind,
                        "rank 0 could not plan: " + received.substr(newline == std::string::npos ? 0 : newline + 1));
  }
  return received;
}

}  // namespace

plan::PlanOptions AutoParallelOptions::default_plan_options() {
  plan::PlanOptions options;
  options.device = plan::reference_cpu();
  return options;
}

CaptureOptions AutoParallel::capture_options(const MixedPrecisionPolicy& precision) {
  CaptureOptions options;
  options.name = "model";
  options.precision = precision;
  return options;
}

AutoParallel::AutoParallel(nn::Module* module, CapturedProgram captured, dist::DeviceMesh mesh,
                           AutoParallelOptions options)
    : module_(module), captured_(std::move(captured)), options_(std::move(options)) {
  forward_ = captured_.cache().front();
  joint_ = std::make_shared<const JointProgram>(export_joint(*forward_));
  problem_ = plan::build_problem(*joint_, mesh, options_.plan);
}

int64_t AutoParallel::user_input(size_t leaf) const {
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    const InputDescriptor& input = joint_->inputs[i];
    if (input.kind == InputDescriptor::Kind::UserInput && input.leaf == leaf) return static_cast<int64_t>(i);
  }
  return -1;
}

void AutoParallel::add_parameter_memory_constraint(double low, double high) {
  constraints_.parameter_memory = plan::ParameterMemory{low, high};
}

void AutoParallel::add_input_constraints(const std::vector<std::optional<plan::PlacementPattern>>& patterns) {
  for (size_t leaf = 0; leaf < patterns.size(); ++leaf) {
    if (!patterns[leaf]) continue;
    const int64_t input = user_input(leaf);
    if (input < 0) {
      throw ValueError("add_input_constraints: forward input leaf " + std::to_string(leaf) +
                       " is not a tensor the graph reads (a non-tensor leaf, a tensor the forward does not use, or "
                       "beyond the inputs); give it nullopt");
    }
    constraints_.inputs.push_back({input, *patterns[leaf]});
  }
}

void AutoParallel::add_output_constraints(const std::vector<std::optional<plan::PlacementPattern>>& patterns) {
  for (size_t leaf = 0; leaf < patterns.size(); ++leaf) {
    if (!patterns[leaf]) continue;
    bool found = false;
    for (size_t d = 0; d < joint_->num_forward_outputs; ++d) {
      const OutputDescriptor& output = joint_->outputs[d];
      if (output.kind == OutputDescriptor::Kind::UserOutput && output.leaf == leaf && joint_->graph_output[d] >= 0) {
        constraints_.outputs.push_back({joint_->graph_output[d], *patterns[leaf]});
        found = true;
      }
    }
    if (!found) {
      throw ValueError("add_output_constraints: forward output leaf " + std::to_string(leaf) +
                       " is not a tensor the graph computes");
    }
  }
}

void AutoParallel::set_memory_budget(double bytes_per_device) { constraints_.memory_budget_bytes = bytes_per_device; }

plan::ShardingPlan AutoParallel::optimize_placement() {
  return plan::solve_plan(*joint_, problem_, constraints_, options_.solve);
}

plan::ShardingPlan AutoParallel::optimize_placement(const dist::MeshGroups& groups) {
  return broadcast_plan(groups, [this] { return optimize_placement(); });
}

plan::ShardingPlan AutoParallel::broadcast_plan(const dist::MeshGroups& groups,
                                                const std::function<plan::ShardingPlan()>& make) {
  if (groups.mesh() != problem_.mesh) {
    throw ValueError("broadcast_plan: the groups' mesh " + groups.mesh().str() + " is not the planned mesh " +
                     problem_.mesh.str());
  }
  dist::ProcessGroup& world = groups.world();
  std::string text;
  if (world.rank() == 0) {
    try {
      text = plan_json(make());
    } catch (const Error& error) {
      broadcast_text(world, error.kind() + "\n" + error.message(), true);
      throw;
    }
  }
  return plan_from_json(broadcast_text(world, text, false));
}

ParallelModule AutoParallel::apply_placement(const plan::ShardingPlan& sharding,
                                             std::shared_ptr<const dist::MeshGroups> groups) {
  if (!groups) throw ValueError("apply_placement: no mesh groups");
  if (groups->mesh() != problem_.mesh) {
    throw ValueError("apply_placement: the groups' mesh " + groups->mesh().str() + " is not the planned mesh " +
                     problem_.mesh.str());
  }
  const plan::DecodedPlan decoded = plan::decode(problem_, sharding.choice);
  lower::RankProgram lowered = lower::lower_rank(*joint_, decoded, problem_.mesh, problem_.topology, groups->rank());
  return ParallelModule(forward_, joint_, std::move(lowered), *module_, std::move(groups), options_.train);
}

std::vector<plan::BaselineResult> AutoParallel::baselines(const plan::BaselineOptions& options) {
  return plan::solve_baselines(*joint_, problem_, constraints_, options_.solve, options);
}

plan::PlanReport AutoParallel::report(const plan::ShardingPlan& sharding) const {
  return plan::make_report(*joint_, problem_, sharding);
}

std::string AutoParallel::plan_json(const plan::ShardingPlan& sharding) const {
  return plan::plan_to_json(*joint_, problem_, sharding);
}

plan::ShardingPlan AutoParallel::plan_from_json(const std::string& json) const {
  return plan::plan_from_json(*joint_, problem_, json, constraints_.memory_budget_bytes);
}

}  // namespace px

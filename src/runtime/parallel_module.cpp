#include "parallax/runtime/parallel_module.h"

#include <chrono>
#include <utility>

#include "dtensor/redistribute_exec.h"
#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dist/sharding.h"
#include "parallax/dtensor/redistribute.h"
#include "parallax/ops/factory.h"
#include "parallax/runtime/init.h"

namespace px {

namespace {

// Ranks holding each element of a tensor placed so (Shard and Replicate only: graph inputs).
int64_t replication(const std::vector<Placement>& placements, const dist::DeviceMesh& mesh) {
  int64_t copies = 1;
  for (size_t d = 0; d < placements.size(); ++d) {
    if (std::holds_alternative<Replicate>(placements[d])) copies *= mesh.size(static_cast<int64_t>(d));
  }
  return copies;
}

// The whole tensor from this rank's shard (collective over the mesh when anything is sharded).
Tensor gathered(const Tensor& local, const std::vector<Placement>& placements, const TensorMeta& global,
                const dist::MeshGroups& groups) {
  const std::vector<Placement> replicated(placements.size(), Replicate{});
  if (placements == replicated) return local;
  const dist::MeshTopology links = dist::MeshTopology::uniform(groups.mesh().ndim(), threads_backend_profile());
  const RedistributePlan plan = plan_redistribute(DTensorSpec{groups.mesh(), placements, global}, replicated, links);
  return detail::run_redistribute(local, Tensor(), plan, groups);
}

}  // namespace

ParallelModule::ParallelModule(std::shared_ptr<const CapturedGraph> captured, std::shared_ptr<const JointProgram> joint,
                               lower::RankProgram lowered, nn::Module& module,
                               std::shared_ptr<const dist::MeshGroups> groups, TrainOptions options)
    : captured_(std::move(captured)),
      joint_(std::move(joint)),
      lowered_(std::move(lowered)),
      groups_(std::move(groups)),
      options_(options) {
  if (!captured_ || !joint_ || !groups_) throw ValueError("ParallelModule: captured, joint and groups are required");
  if (groups_->rank() != lowered_.rank) {
    throw ValueError("ParallelModule: the program was lowered for rank " + std::to_string(lowered_.rank) +
                     ", but this is rank " + std::to_string(groups_->rank()));
  }
  if (joint_->inputs.size() != lowered_.graph.inputs().size() ||
      captured_->graph.inputs().size() > joint_->inputs.size()) {
    throw ValueError("ParallelModule: the lowered program does not belong to this joint program");
  }
  if (!captured_->mutations.empty()) {
    throw UnsupportedOp(
        "ParallelModule: the forward changes attributes of subclass inputs, which training on a "
        "mesh does not replay");
  }

  // The loss: the one forward output a tangent seeds.
  std::vector<size_t> tangents;
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    if (joint_->inputs[i].kind == InputDescriptor::Kind::Tangent) tangents.push_back(i);
  }
  if (tangents.size() != 1) {
    throw ValueError(
        "ParallelModule: forward must return exactly one floating output that depends on the "
        "parameters (the loss); it has " +
        std::to_string(tangents.size()));
  }
  tangent_input_ = tangents.front();
  const TensorMeta& tangent = lowered_.global_inputs[tangent_input_];
  if (tangent.shape.size() != 0) {
    throw ValueError("ParallelModule: the loss must be a scalar, got " + tangent.str());
  }
  loss_output_ = -1;
  for (size_t d = 0; d < joint_->num_forward_outputs; ++d) {
    const OutputDescriptor& output = joint_->outputs[d];
    if (output.kind == OutputDescriptor::Kind::UserOutput && output.leaf == joint_->inputs[tangent_input_].leaf) {
      loss_output_ = joint_->graph_output[d];
    }
  }
  if (loss_output_ < 0) throw ValueError("ParallelModule: the loss output was not found");

  // Shards of the parameters and buffers, each made on its own.
  const dist::DeviceMesh& mesh = groups_->mesh();
  std::vector<nn::SlotRef> slots = module.slots();
  state_.resize(joint_->inputs.size());
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    const InputDescriptor& input = joint_->inputs[i];
    if (input.kind == InputDescriptor::Kind::SubclassInner) {
      throw UnsupportedOp("ParallelModule: subclass input " + input.str() + " cannot be trained on a mesh yet");
    }
    if (!input.is_param_or_buffer()) continue;
    const std::string& fqn = input.fqns.front();
    const nn::SlotRef* slot = nullptr;
    for (const nn::SlotRef& ref : slots) {
      if (ref.fqn == fqn) slot = &ref;
    }
    if (slot == nullptr) throw ValueError("ParallelModule: the module has no slot '" + fqn + "'");
    const TensorMeta& global = lowered_.global_inputs[i];
    const dist::LocalShard shard =
        dist::local_shard(global.shape, lowered_.input_placements[i], mesh, lowered_.coordinate);
    if (slot->tensor->is_meta()) {
      state_[i] =
          runtime::init_block(slot->init, nn::init_stream_key(options_.seed, fqn), global, shard.offset, shard.shape);
    } else {
      state_[i] = local_block(*slot->tensor, i).clone();
    }
  }

  std::vector<Tensor> params;
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    if (joint_->inputs[i].kind != InputDescriptor::Kind::Param) continue;
    const int64_t grad = joint_->grad_output_of(joint_->inputs[i]);
    if (grad < 0) continue;
    trained_.push_back(i);
    grad_output_.push_back(grad);
    grad_weights_.push_back(1.0 / static_cast<double>(replication(lowered_.input_placements[i], mesh)));
    params.push_back(state_[i]);
  }
  if (options_.optimizer == TrainOptions::OptimizerKind::AdamW) {
    optimizer_ = std::make_unique<runtime::AdamW>(std::move(params), options_.adamw);
  } else {
    optimizer_ = std::make_unique<runtime::Sgd>(std::move(params), options_.sgd);
  }
  executor_ = std::make_unique<runtime::Executor>(lowered_.graph);
}

ParallelModule::ParallelModule(ParallelModule&&) noexcept = default;
ParallelModule& ParallelModule::operator=(ParallelModule&&) noexcept = default;
ParallelModule::~ParallelModule() = default;

Tensor ParallelModule::local_block(const Tensor& global, size_t input) const {
  const dist::LocalShard shard =
      dist::local_shard(global.shape(), lowered_.input_placements[input], groups_->mesh(), lowered_.coordinate);
  Tensor block = global;
  for (size_t d = 0; d < shard.shape.size(); ++d) {
    if (shard.shape[d] != global.shape()[d])
      block = block.narrow(static_cast<int64_t>(d), shard.offset[d], shard.shape[d]);
  }
  return block.is_contiguous() ? block : block.contiguous();
}

Tree ParallelModule::train_step(const Tree& inputs) {
  std::vector<const Tree*> leaves;
  if (std::optional<std::string> failure = captured_->guards.check(inputs, leaves)) throw GuardError(*failure);
  std::vector<Tensor> locals(joint_->inputs.size());
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    const InputDescriptor& input = joint_->inputs[i];
    if (input.is_param_or_buffer()) {
      locals[i] = state_[i];
    } else if (i == tangent_input_) {
      locals[i] = px::full({}, 1.0, lowered_.global_inputs[i].dtype);
    } else {
      locals[i] = local_block(captured_->sources[i].resolve(leaves), i);
    }
  }
  const std::vector<Tensor> outputs = executor_->run(locals, &stats_, runtime::RunOptions{options_.time_nodes});

  std::vector<Tensor> grads;
  for (int64_t output : grad_output_) grads.push_back(outputs[static_cast<size_t>(output)]);
  if (options_.max_grad_norm) {
    dist::ProcessGroup& world = groups_->world();
    runtime::clip_grad_norm(grads, *options_.max_grad_norm, grad_weights_, [&world](double local) {
      Tensor sum = px::full({}, local, DType::Float64);
      world.all_reduce(sum, ReduceOp::Sum);
      return sum.item<double>();
    });
  }
  if (options_.time_nodes) {
    // One parameter at a time (the others' gradients undefined: the optimizer skips them, their
    // state and step counts unmoved), so each update is timed apart, as calibration needs.
    update_seconds_.assign(grads.size(), 0.0);
    std::vector<Tensor> one(grads.size());
    for (size_t k = 0; k < grads.size(); ++k) {
      one[k] = grads[k];
      const auto started = std::chrono::steady_clock::now();
      optimizer_->step(one);
      update_seconds_[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      one[k] = Tensor();
    }
  } else {
    optimizer_->step(grads);
  }
  ++steps_;
  last_loss_ = outputs[static_cast<size_t>(loss_output_)].to(DType::Float64).item<double>();

  for (const OutputLeaf& leaf : captured_->output_leaves) {
    if (leaf.kind == OutputLeaf::Kind::Subclass) {
      throw UnsupportedOp(
          "ParallelModule: forward returns a subclass tensor, which training on a mesh does not "
          "rebuild yet");
    }
  }
  // Forward's outputs whole on every rank: the joint graph's first outputs, gathered.
  std::vector<Tensor> forward_outputs;
  for (size_t j = 0; j < captured_->graph.outputs().size(); ++j) {
    const auto g = static_cast<size_t>(joint_->graph_output[j]);
    forward_outputs.push_back(
        gathered(outputs[g], lowered_.output_placements[g], lowered_.global_outputs[g], *groups_));
  }
  return captured_->output_tree(leaves, forward_outputs);
}

std::vector<TensorMeta> ParallelModule::trained_local_metas() const {
  std::vector<TensorMeta> metas;
  for (size_t input : trained_) metas.push_back(state_[input].meta_info());
  return metas;
}

std::vector<std::string> ParallelModule::parameter_names() const {
  std::vector<std::string> names;
  for (const InputDescriptor& input : joint_->inputs) {
    if (input.kind == InputDescriptor::Kind::Param) names.push_back(input.fqns.front());
  }
  return names;
}

size_t ParallelModule::input_of(const std::string& name) const {
  std::string known;
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    if (!joint_->inputs[i].is_param_or_buffer()) continue;
    for (const std::string& fqn : joint_->inputs[i].fqns) {
      if (fqn == name) return i;
    }
    if (known.size() < 200) known += (known.empty() ? "" : ", ") + joint_->inputs[i].fqns.front();
  }
  throw ValueError("ParallelModule: no parameter or buffer '" + name + "' (have " + known + ", ...)");
}

const Tensor& ParallelModule::local_tensor(const std::string& name) const { return state_[input_of(name)]; }

const std::vector<Placement>& ParallelModule::placements(const std::string& name) const {
  return lowered_.input_placements[input_of(name)];
}

Tensor ParallelModule::full_tensor(const std::string& name) const {
  const size_t i = input_of(name);
  return gathered(state_[i], lowered_.input_placements[i], lowered_.global_inputs[i], *groups_);
}

int64_t ParallelModule::parameter_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& tensor : state_) {
    if (tensor.defined()) bytes += tensor.numel() * static_cast<int64_t>(dtype_size(tensor.dtype()));
  }
  return bytes;
}

}  // namespace px

#pragma once
// ParallelModule: one rank's share of a model trained under a sharding plan.
//
// It holds this rank's lowered program (lower/lower.h) and only local shards of the parameters
// and buffers, never a full large tensor. Each shard is initialized on its own, from the
// parameter's nn::Init with the counter-based stream keyed by (seed, canonical name) at the
// shard's global indices (runtime/init.h): the values are those nn::Module::materialize(seed)
// gives the single-device model. A parameter the module holds concretely (registered with
// values, or materialized before) is sliced instead.
//
// train_step(inputs): every rank passes the same global inputs (the user's pytree, as forward
// took them); the capture's guards check them; each rank keeps its block of every input tensor,
// runs its program (forward and backward on local shards, collectives through the bound
// MeshGroups), clips gradients by their global norm (optional), and updates its shards with
// SGD or AdamW. It returns forward's outputs in the user's structure, each tensor whole on every
// rank. Collective: all ranks call it together, as they call full_parameter().
//
// The forward must return exactly one scalar floating output that depends on the parameters
// (the loss, seeded with 1 as backward() does); other outputs come back as they are.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parallax/autodiff/export.h"
#include "parallax/capture/capture.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/lower/lower.h"
#include "parallax/nn/module.h"
#include "parallax/runtime/executor.h"
#include "parallax/runtime/optimizer.h"

namespace px {

struct TrainOptions {
  enum class OptimizerKind : uint8_t { AdamW, Sgd };
  OptimizerKind optimizer = OptimizerKind::AdamW;
  runtime::AdamWOptions adamw;
  runtime::SgdOptions sgd;
  std::optional<double> max_grad_norm;  // clip gradients to this global norm (torch's clip_grad_norm_)
  uint64_t seed = 0;                    // parameter initialization, as nn::Module::materialize(seed)
  bool time_nodes = false;              // record each node's time in last_stats().node_seconds
};

class ParallelModule {
 public:
  // `captured`: the forward capture the joint program came from (guards, input and output
  // structure); `module`: the model, for each slot's Init (or its concrete values); `groups`:
  // this rank's bound mesh, whose rank `lowered` was made for. ValueError when they disagree or
  // the forward has no single scalar loss.
  ParallelModule(std::shared_ptr<const CapturedGraph> captured, std::shared_ptr<const JointProgram> joint,
                 lower::RankProgram lowered, nn::Module& module, std::shared_ptr<const dist::MeshGroups> groups,
                 TrainOptions options = {});
  ParallelModule(ParallelModule&&) noexcept;
  ParallelModule& operator=(ParallelModule&&) noexcept;
  ~ParallelModule();

  Tree train_step(const Tree& inputs);
  template <class... Args>
  Tree train_step(const Args&... args) {
    return train_step(Tree::tuple({to_tree(args)...}));
  }
  // The loss of the last train_step (the scalar output, as a double).
  double last_loss() const { return last_loss_; }

  // Canonical names of the parameters, in graph order.
  std::vector<std::string> parameter_names() const;
  // This rank's shard of a parameter or buffer (by any of its names), and its placements.
  // ValueError naming the candidates for an unknown name.
  const Tensor& local_tensor(const std::string& name) const;
  const std::vector<Placement>& placements(const std::string& name) const;
  // The whole tensor (collective: every rank calls it with the same name).
  Tensor full_tensor(const std::string& name) const;

  const lower::RankProgram& program() const { return lowered_; }
  const runtime::ExecutionStats& last_stats() const { return stats_; }  // of the last step's run
  int64_t optimizer_state_bytes() const { return optimizer_->state_bytes(); }
  // The optimizer's update of each trained parameter's local shard in the last step, in seconds
  // (empty unless TrainOptions::time_nodes), beside the shard's meta: what calibration fits the
  // planner's "optimizer_update" op to (plan/builder.h, optimizer_update_cost).
  const std::vector<double>& last_update_seconds() const { return update_seconds_; }
  std::vector<TensorMeta> trained_local_metas() const;
  // Bytes of this rank's parameter and buffer shards.
  int64_t parameter_bytes() const;

  // Training steps taken, counted from 0 or from the checkpoint load() read.
  int64_t steps_done() const { return steps_; }

  // Sharded checkpoints (runtime/checkpoint.cpp; the format is in docs/checkpoint.md).
  // save: collective. Each rank writes its own shards of the parameters, buffers and optimizer
  // state (one rank per replicated block) to DIR/rank-NNNNN.safetensors, and rank 0 then writes
  // DIR/checkpoint.json (global shapes, dtypes, placements, the mesh, every block's place, the
  // step count, the optimizer's step counts, the seed), last and atomically: a save that stops
  // part way leaves no checkpoint.json, so nothing loads. ValueError naming the path when a file
  // cannot be written.
  void save(const std::string& dir) const;
  // load: each rank on its own. Reads, for each of this rank's shards, only the byte ranges of
  // the saved blocks that overlap it, so a checkpoint saved under any mesh and plan loads under
  // any other. Restores the step count and the optimizer's state. Returns the bytes of tensor
  // data read. ValueError naming the checkpoint and the tensor when it is missing, belongs to
  // another model (a name, shape or dtype differs), was saved with another optimizer, or its
  // files are not from the same save.
  int64_t load(const std::string& dir);

 private:
  size_t input_of(const std::string& name) const;
  Tensor local_block(const Tensor& global, size_t input) const;

  std::shared_ptr<const CapturedGraph> captured_;
  std::shared_ptr<const JointProgram> joint_;
  lower::RankProgram lowered_;
  std::shared_ptr<const dist::MeshGroups> groups_;
  TrainOptions options_;
  std::unique_ptr<runtime::Executor> executor_;
  std::vector<Tensor> state_;         // per joint input: the shard for Param and Buffer inputs
  std::vector<size_t> trained_;       // joint inputs that are parameters with a gradient
  std::vector<int64_t> grad_output_;  // per trained parameter: its gradient's graph output
  std::vector<double> grad_weights_;  // per trained parameter: 1 / ranks holding each element
  std::unique_ptr<runtime::Optimizer> optimizer_;
  size_t tangent_input_ = 0;
  int64_t loss_output_ = 0;
  runtime::ExecutionStats stats_;
  std::vector<double> update_seconds_;  // per trained parameter, when timing
  double last_loss_ = 0;
  int64_t steps_ = 0;
};

}  // namespace px

#pragma once
// Optimizers over plain dense tensors, with torch.optim's semantics (SGD and AdamW, the
// single-tensor path: foreach off, no amsgrad, no maximize).
//
// A parameter may be a local shard: every update is elementwise, so a shard updates exactly
// as the same block of the whole tensor would. step() writes into the parameters' storage, so
// every handle to a parameter (a module slot, a view of it) sees the new values.
//
// Arithmetic follows torch's op order and its compute type: float32 parameters update in
// float with the Python-double scalars (lr, 1 - beta1, bias corrections, ...) rounded to
// float, float64 ones in double. bfloat16 parameters update in float and round back to
// bfloat16; their optimizer state is kept in float32 (torch would keep it in bfloat16), so
// that state does not lose the small updates bfloat16 cannot hold.
//
// State (momentum buffers, exp_avg, exp_avg_sq) is allocated when the optimizer is built, so
// state_bytes() is known before the first step; torch allocates the same tensors lazily.
// A parameter whose gradient is undefined is skipped, as torch skips a None grad: its state
// and its step count do not move.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parallax/core/tensor.h"

namespace px::runtime {

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One gradient per parameter, in order, each with its parameter's shape and dtype (any
  // strides), or undefined to skip that parameter. Validates every gradient before updating
  // anything: ValueError naming the index otherwise, and no parameter changes.
  virtual void step(const std::vector<Tensor>& grads) = 0;
  // Bytes of the state tensors this optimizer holds (step counters not included).
  virtual int64_t state_bytes() const = 0;
  virtual std::string_view name() const = 0;  // "SGD", "AdamW"
  virtual double lr() const = 0;
  // For a learning-rate schedule; ValueError for a negative or non-finite rate.
  virtual void set_lr(double lr) = 0;

  const std::vector<Tensor>& params() const { return params_; }

  // Checkpointing. Parameter `index`'s state tensors by name, sharing the optimizer's storage
  // (allocated up front, so they exist before the first step): a checkpoint writes them, and
  // copying values into them restores it. AdamW: exp_avg, exp_avg_sq; SGD: momentum_buffer
  // (none while momentum is 0). ValueError for an index out of range.
  virtual std::vector<std::pair<std::string, Tensor>> state_tensors(size_t index) const = 0;
  // How many steps updated parameter `index` (SGD: 0 or 1, whether its momentum has started),
  // and its restore. ValueError for an index out of range or a negative count.
  virtual int64_t steps_taken(size_t index) const = 0;
  virtual void restore_steps(size_t index, int64_t steps) = 0;

 protected:
  // ValueError (naming `who` and the index) for an undefined, non-dense or non-floating
  // parameter, one whose elements overlap in memory (a stride-0 dim, as from expand), or one
  // given twice (the same view of the same storage: it would update twice).
  Optimizer(std::vector<Tensor> params, std::string_view who);
  // The checks step() promises, against params_.
  void check_grads(const std::vector<Tensor>& grads) const;

  std::vector<Tensor> params_;
};

// torch.optim.SGD. ValueError (as torch) for a negative or NaN lr, momentum or weight decay,
// or nesterov without a positive momentum and zero dampening.
class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Tensor> params, SgdOptions options = {});

  void step(const std::vector<Tensor>& grads) override;
  int64_t state_bytes() const override;
  std::string_view name() const override { return "SGD"; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;
  const SgdOptions& options() const { return options_; }
  // Parameter i's momentum buffer (float32 for a bfloat16 parameter); undefined while
  // momentum is 0 or before the first step that updated parameter i.
  Tensor momentum_buffer(size_t index) const;
  std::vector<std::pair<std::string, Tensor>> state_tensors(size_t index) const override;
  int64_t steps_taken(size_t index) const override;
  void restore_steps(size_t index, int64_t steps) override;

 private:
  SgdOptions options_;
  std::vector<Tensor> buffers_;  // allocated up front when momentum != 0
  std::vector<bool> started_;    // the first step copies the gradient into the buffer
};

// torch.optim.AdamW (amsgrad off). ValueError (as torch) for a negative or NaN lr, eps or
// weight decay, or a beta outside [0, 1).
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});

  void step(const std::vector<Tensor>& grads) override;
  int64_t state_bytes() const override;
  std::string_view name() const override { return "AdamW"; }
  double lr() const override { return options_.lr; }
  void set_lr(double lr) override;
  const AdamWOptions& options() const { return options_; }
  // Parameter i's state (float32 for a bfloat16 parameter) and how many steps updated it.
  Tensor exp_avg(size_t index) const;
  Tensor exp_avg_sq(size_t index) const;
  int64_t step_count(size_t index) const;
  std::vector<std::pair<std::string, Tensor>> state_tensors(size_t index) const override;
  int64_t steps_taken(size_t index) const override { return step_count(index); }
  void restore_steps(size_t index, int64_t steps) override;

 private:
  AdamWOptions options_;
  std::vector<Tensor> exp_avg_;
  std::vector<Tensor> exp_avg_sq_;
  std::vector<int64_t> steps_;
};

// torch.nn.utils.clip_grad_norm_ (norm_type 2) over gradients that may be local shards.
// The global squared norm is sum_across_ranks(sum_i weights[i] * ||grads[i]||^2), the local
// squares summed in double; weights[i] is 1/k for a gradient whose elements are replicated on
// k ranks, so that each element counts once over the world. sum_across_ranks is the identity
// on one device and an all_reduce(sum) over the world on many; an empty function is the
// identity, and empty weights mean all 1. With total = sqrt(global sum) and
// coef = max_norm / (total + 1e-6), every gradient is scaled in place by coef unless
// coef >= 1 (a NaN total therefore makes the gradients NaN, as torch does). Returns total.
// Undefined gradients are skipped. ValueError for weights of the wrong length, a negative or
// non-finite weight, a negative or NaN max_norm, or a non-dense, non-floating or expanded
// (stride-0) gradient, which cannot be scaled in place.
double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, const std::vector<double>& weights = {},
                      const std::function<double(double)>& sum_across_ranks = {});

}  // namespace px::runtime

#pragma once
// The joint forward+backward graph of one training step of a zoo model (nn/zoo.h), captured on
// meta tensors: nothing is allocated, so llama3-70b costs what llama-mini does, per node.
// What `parallax plan` and the planner's benchmarks and tests start from.

#include <cstdint>

#include "parallax/autodiff/export.h"
#include "parallax/nn/zoo.h"

namespace px {

// Inputs: for the MLP x [batch, in] of the model's dtype and y int64 [batch] (`seq` unused);
// for GPT and LLaMA tokens and targets int64 [batch, seq]. The captured program is named after
// the kind ("mlp", "gpt", "llama"; the joint graph "llama.joint"). ValueError for batch or seq < 1, or seq beyond the
// model's max_seq. `precision` is applied by the capture (capture.h): parameters cast to its param dtype, the loss to
// its output dtype.
JointProgram training_step_joint(const nn::ModelSpec& model, int64_t batch, int64_t seq,
                                 const MixedPrecisionPolicy& precision = {});

}  // namespace px

#pragma once
// Joint programs of small and preset models for the builder's tests, captured on meta
// tensors (nothing is allocated): each returns a training step's joint graph with its loss.

#include <cstdint>

#include "parallax/autodiff/export.h"
#include "parallax/nn/models.h"

namespace px::plan::testing {

// loss = cross_entropy(fc2(gelu_tanh(fc1(x))), y) with x f32 [batch, in], y int64 [batch].
JointProgram mlp_joint(int64_t batch, int64_t in, int64_t hidden, int64_t out);
// loss = lm_loss(model(tokens), targets), tokens and targets int64 [batch, seq].
JointProgram gpt_joint(const nn::GPTConfig& config, int64_t batch, int64_t seq);
JointProgram llama_joint(const nn::LlamaConfig& config, int64_t batch, int64_t seq);

// A llama whose every parameter splits evenly over 8 devices (dim 256, 16 heads, FFN 1024,
// vocab 1024, max_seq 64; no size-4 biases), with `layers` layers.
nn::LlamaConfig even_llama(int64_t layers = 2);

}  // namespace px::plan::testing

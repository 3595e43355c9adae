#include "plan/builder_models.h"

#include "parallax/autodiff/training_step.h"

namespace px::plan::testing {

JointProgram mlp_joint(int64_t batch, int64_t in, int64_t hidden, int64_t out) {
  nn::ModelSpec spec = nn::zoo_model("mlp");
  spec.mlp = {.in = in, .hidden = hidden, .out = out};
  return training_step_joint(spec, batch, 1);
}

JointProgram gpt_joint(const nn::GPTConfig& config, int64_t batch, int64_t seq) {
  nn::ModelSpec spec = nn::zoo_model("gpt-mini");
  spec.gpt = config;
  return training_step_joint(spec, batch, seq);
}

JointProgram llama_joint(const nn::LlamaConfig& config, int64_t batch, int64_t seq) {
  nn::ModelSpec spec = nn::zoo_model("llama-mini");
  spec.llama = config;
  return training_step_joint(spec, batch, seq);
}

nn::LlamaConfig even_llama(int64_t layers) {
  nn::LlamaConfig config = nn::llama_mini();
  config.dim = 256;
  config.n_heads = 16;
  config.n_kv_heads = 16;
  config.ffn_hidden = 1024;
  config.vocab = 1024;
  config.max_seq = 64;
  config.n_layers = layers;
  return config;
}

}  // namespace px::plan::testing

#pragma once
// Hugging Face parameter names and layouts <-> Parallax's, per architecture.
//
// A model read from a Hugging Face config (nn::model_from_hf_config) stores its weights under
// transformers' names and, in two places, in another layout:
// - GPT-2's projections are Conv1D modules, weight [in, out] (Linear's transpose), and q, k, v
//   share one c_attn of [dim, 3 * dim];
// - the LLaMA family's rotary embedding rotates the pairs (x[i], x[i + hd/2]) of each head
//   (transformers' rotate_half), where Parallax's rope rotates (x[2i], x[2i+1]): the rows of q and
//   k (weights and biases) are the same rows in another order per head, which leaves every q·k, and
//   so the model, unchanged.
// The map names, for each Parallax parameter, the Hugging Face tensor it comes from and that
// transform; to_parallax and to_hf apply it one way and the other, exactly (only moves of values).
//
// Names are the model's own (`h.0.attn.wq.weight`, `layers.0.attention.wq.weight`), without the
// prefix a loss module adds ("model.").

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/nn/zoo.h"

namespace px::io {

struct HfSource {
  std::string hf_name{};
  // Columns [begin, end) of the Hugging Face tensor's last dim (GPT-2's fused c_attn).
  std::optional<std::pair<int64_t, int64_t>> columns{};
  bool transpose = false;  // Conv1D's [in, out] against Linear's [out, in]
  int64_t rope_heads = 0;  // > 0: dim 0 holds this many heads in rotate_half order
};

struct HfParameter {
  std::string name;  // Parallax's
  HfSource source;
};

// Every Parallax parameter of `spec`'s model with its Hugging Face source (a tied output
// projection is not listed: it is the embedding). ValueError unless spec.architecture is one of
// nn::hf_architectures().
std::vector<HfParameter> hf_parameter_map(const nn::ModelSpec& spec);

// Tensors a Hugging Face checkpoint of the architecture may hold that are not parameters (GPT-2's
// attention mask buffers, LLaMA's cached rope frequencies); loading skips them.
bool is_hf_buffer(const std::string& hf_name);

// The Parallax parameter from the Hugging Face tensor it comes from (a new contiguous tensor).
Tensor to_parallax(const HfSource& source, const Tensor& hf_tensor);

// The Hugging Face state dict of a model: `parameter(name)` gives a Parallax parameter (whole) by
// its name; tensors come back in the map's order, GPT-2's c_attn assembled from q, k and v.
std::vector<std::pair<std::string, Tensor>> to_hf(const nn::ModelSpec& spec,
                                                  const std::function<Tensor(const std::string&)>& parameter);

// The Hugging Face name of a Parallax checkpoint: in transformers 4.x files, GPT-2's weights may
// be stored without the "transformer." prefix (the original gpt2 checkpoints are); `available`
// says whether a name is in the file, and the first of the two forms present is returned.
std::string resolve_hf_name(const std::string& hf_name, const std::function<bool(const std::string&)>& available);

// A config.json for `spec` in transformers' format (the fields model_from_hf_config reads back to
// the same model). ValueError unless spec.architecture is set.
std::string hf_config_json(const nn::ModelSpec& spec);

}  // namespace px::io

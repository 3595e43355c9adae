#pragma once
// Hugging Face model directories, read and written: config.json plus model.safetensors (or its
// sharded form), the layouts of io/hf_weights.h in between.

#include <cstdint>
#include <functional>
#include <string>

#include "parallax/nn/module.h"
#include "parallax/nn/zoo.h"

namespace px::io {

// True when `dir` holds weights (model.safetensors or model.safetensors.index.json).
bool has_hf_weights(const std::string& dir);

// Fills the parameters of `model` (built from `spec`, e.g. by nn::load_model(dir)) with the
// weights in `dir`, converted to Parallax's layout and to each parameter's dtype; `prefix` is
// where the model sits in `model` ("model." inside an nn::LmLoss). Tied parameters stay tied.
// Every parameter is read whole, one at a time (a ParallelModule then keeps each rank's block).
// ValueError naming the directory and the tensor when one is missing, has another shape, or the
// checkpoint holds a tensor the model has no place for (it would be silently dropped otherwise).
// Nothing is assigned unless every tensor reads and checks.
void load_hf_weights(nn::Module& model, const nn::ModelSpec& spec, const std::string& dir,
                     const std::string& prefix = "");

// Writes `dir`/config.json and the weights (model.safetensors; shards of at most
// `max_shard_bytes`, 5 GB as transformers' default, with an index when they do not fit in one)
// from `parameter(name)`, which gives a parameter of the model whole by its Parallax name (no
// prefix). ValueError unless spec.architecture is one of nn::hf_architectures().
void save_hf_model(const std::string& dir, const nn::ModelSpec& spec,
                   const std::function<Tensor(const std::string&)>& parameter,
                   int64_t max_shard_bytes = int64_t{5} * 1000 * 1000 * 1000);

}  // namespace px::io

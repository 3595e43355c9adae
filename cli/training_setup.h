#pragma once
// What `parallax run` and `parallax calibrate` share to train a zoo model: synthetic data, the
// model's construction, and the plan picked by name.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include "parallax/api/auto_parallel.h"
#include "parallax/core/error.h"
#include "parallax/nn/zoo.h"
#include "parallax/ops/factory.h"

namespace px::cli {

// Synthetic data the model can learn, the same on every rank: for the language models, tokens
// whose target is the next token id (t + 1 mod vocab); for the MLP, the class is the largest of
// the first `out` features.
struct Batches {
  nn::ModelSpec spec;
  int64_t batch = 0, seq = 0;
  uint64_t seed = 0;

  std::tuple<Tensor, Tensor> at(int64_t step) const {
    std::mt19937_64 random(seed * 1000003 + static_cast<uint64_t>(step));
    if (spec.kind == nn::ModelSpec::Kind::Mlp) {
      Tensor x = px::full({batch, spec.mlp.in}, 0.0, DType::Float64);
      Tensor y = px::full({batch}, 0.0, DType::Int64);
      std::normal_distribution<double> normal;
      for (int64_t i = 0; i < batch; ++i) {
        int64_t best = 0;
        for (int64_t j = 0; j < spec.mlp.in; ++j) {
          const double value = normal(random);
          x.data<double>()[i * spec.mlp.in + j] = value;
          if (j < spec.mlp.out && value > x.data<double>()[i * spec.mlp.in + best]) best = j;
        }
        y.data<int64_t>()[i] = best;
      }
      return {x.to(spec.mlp.dtype), y};
    }
    const int64_t vocab = spec.kind == nn::ModelSpec::Kind::Gpt ? spec.gpt.vocab : spec.llama.vocab;
    Tensor tokens = px::full({batch, seq}, 0.0, DType::Int64);
    Tensor targets = px::full({batch, seq}, 0.0, DType::Int64);
    std::uniform_int_distribution<int64_t> token(0, vocab - 1);
    for (int64_t i = 0; i < batch * seq; ++i) {
      tokens.data<int64_t>()[i] = token(random);
      targets.data<int64_t>()[i] = (tokens.data<int64_t>()[i] + 1) % vocab;
    }
    return {tokens, targets};
  }
  std::tuple<Tensor, Tensor> metas() const {
    auto [a, b] = at(0);
    return {Tensor::meta(a.shape(), a.dtype()), Tensor::meta(b.shape(), b.dtype())};
  }
  int64_t tokens_per_step() const { return spec.kind == nn::ModelSpec::Kind::Mlp ? batch : batch * seq; }
};

// Calls f(model) with a fresh meta model of the spec's kind.
template <class F>
void with_model(const nn::ModelSpec& spec, F&& f) {
  switch (spec.kind) {
    case nn::ModelSpec::Kind::Mlp: {
      nn::MlpLoss model(spec.mlp);
      f(model);
      return;
    }
    case nn::ModelSpec::Kind::Gpt: {
      nn::LmLoss<nn::GPT> model(spec.gpt);
      f(model);
      return;
    }
    case nn::ModelSpec::Kind::Llama: {
      nn::LmLoss<nn::Llama> model(spec.llama);
      f(model);
      return;
    }
  }
}

// The plan called `name`: "solver" (the solver's), the path of a plan file, or a hand-written
// baseline (DP, FSDP, TP, FSDP+TP). InfeasiblePlan when the baseline has no plan on this mesh;
// ValueError for a name that is none of these.
inline plan::ShardingPlan select_plan(AutoParallel& ap, const std::string& name, const dist::DeviceMesh& mesh) {
  if (name == "solver") return ap.optimize_placement();
  if (std::filesystem::is_regular_file(name)) {
    std::ifstream file(name);
    std::stringstream text;
    text << file.rdbuf();
    try {
      return ap.plan_from_json(text.str());
    } catch (const Error& error) {
      error.rethrow_with_context(name + ": ");
    }
  }
  for (const plan::BaselineResult& baseline : ap.baselines()) {
    if (baseline.baseline.name != name) continue;
    if (!baseline.plan) throw InfeasiblePlan(baseline.baseline.name + ": " + baseline.error);
    return *baseline.plan;
  }
  throw ValueError("--plan: '" + name + "' is neither solver, a baseline (DP, FSDP, TP" +
                   std::string(mesh.ndim() > 1 ? ", FSDP+TP" : "") + ") nor a plan file");
}

}  // namespace px::cli

#include "parallax/autodiff/training_step.h"

#include <string>
#include <tuple>

#include "parallax/capture/capture.h"
#include "parallax/core/error.h"

namespace px {

namespace {

template <class Module>
JointProgram capture_step(Module& module, const Tensor& a, const Tensor& b, const std::string& name,
                          const MixedPrecisionPolicy& precision) {
  CaptureOptions options;
  options.name = name;
  options.precision = precision;
  return export_joint(capture(module, std::make_tuple(a, b), options));
}

}  // namespace

JointProgram training_step_joint(const nn::ModelSpec& model, int64_t batch, int64_t seq,
                                 const MixedPrecisionPolicy& precision) {
  if (batch < 1)
    throw ValueError("training step of " + model.name + ": batch must be >= 1, got " + std::to_string(batch));
  const std::string name = nn::kind_name(model.kind);
  if (model.kind == nn::ModelSpec::Kind::Mlp) {
    nn::MlpLoss module(model.mlp);
    return capture_step(module, Tensor::meta({batch, model.mlp.in}, model.mlp.dtype),
                        Tensor::meta({batch}, DType::Int64), name, precision);
  }
  if (seq < 1 || seq > model.max_seq()) {
    throw ValueError("training step of " + model.name + ": seq must be in [1, " + std::to_string(model.max_seq()) +
                     "] (the model's max_seq), got " + std::to_string(seq));
  }
  const Tensor tokens = Tensor::meta({batch, seq}, DType::Int64), targets = Tensor::meta({batch, seq}, DType::Int64);
  if (model.kind == nn::ModelSpec::Kind::Gpt) {
    nn::LmLoss<nn::GPT> module(model.gpt);
    return capture_step(module, tokens, targets, name, precision);
  }
  nn::LmLoss<nn::Llama> module(model.llama);
  return capture_step(module, tokens, targets, name, precision);
}

}  // namespace px

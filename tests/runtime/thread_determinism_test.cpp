// Issue 19, section 2: Parallax's kernels split over a thread pool (core/parallel.h) and give the
// same bits with any number of threads. A GPT's whole training step (the joint graph through the
// executor, then AdamW) is run with no pool and with pools of 1, 2, 3 and 4 threads, and every
// output and updated parameter is compared bit for bit. The shapes are chosen so that every
// parallel path runs with several chunks: GEMMs split by rows and by columns, attention over
// batch x heads, norms with their weight gradients, softmax, column sums, copies, elementwise
// maps and AdamW.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "parallax/autodiff/training_step.h"
#include "parallax/core/parallel.h"
#include "parallax/kernels/blas_threads.h"
#include "parallax/nn/zoo.h"
#include "parallax/ops/dispatch.h"
#include "parallax/runtime/executor.h"
#include "parallax/runtime/optimizer.h"

namespace px {
namespace {

Tensor tokens(int64_t batch, int64_t seq, int64_t vocab, uint64_t seed) {
  Tensor t = Tensor::empty({batch, seq}, DType::Int64);
  int64_t* data = t.data<int64_t>();
  uint64_t state = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    data[i] = static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(vocab));
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.raw_data(), y.raw_data(), static_cast<size_t>(x.meta_info().nbytes())) == 0;
}

struct StepResult {
  std::vector<Tensor> outputs;     // loss and gradients of the first step
  std::vector<Tensor> parameters;  // after two AdamW steps
};

// Two training steps of a GPT (float32) with `threads` kernel threads (0: no pool at all).
StepResult train_two_steps(int threads) {
  nn::ModelSpec spec = nn::zoo_model("gpt-mini");
  spec.gpt.vocab = 384;
  spec.gpt.max_seq = 64;
  spec.gpt.dim = 128;
  spec.gpt.n_layers = 2;
  spec.gpt.n_heads = 4;
  spec.gpt.dtype = DType::Float32;
  const int64_t batch = 8, seq = 64;
  const JointProgram program = training_step_joint(spec, batch, seq);
  nn::LmLoss<nn::GPT> module(spec.gpt);
  module.materialize(3);
  std::vector<Tensor> inputs, params;
  std::vector<int64_t> grad_outputs;
  int64_t user = 0;
  for (const InputDescriptor& input : program.inputs) {
    if (input.kind == InputDescriptor::Kind::Param) {
      inputs.push_back(module.slot(input.fqns.at(0)));
      params.push_back(inputs.back());
      grad_outputs.push_back(program.grad_output_of(input));
    } else if (input.kind == InputDescriptor::Kind::UserInput) {
      inputs.push_back(tokens(batch, seq, spec.gpt.vocab, user++ == 0 ? 11 : 12));
    } else {
      inputs.push_back(Tensor::scalar(1.0, DType::Float32));
    }
  }
  std::optional<ThreadPool> pool;
  if (threads > 0) pool.emplace(threads);
  ParallelScope scope(pool ? &*pool : nullptr);
  runtime::Executor executor(program.graph);
  runtime::AdamW adamw(params);
  StepResult result;
  for (int step = 0; step < 2; ++step) {
    std::vector<Tensor> outputs = executor.run(inputs);
    std::vector<Tensor> grads;
    for (int64_t index : grad_outputs) grads.push_back(index >= 0 ? outputs.at(static_cast<size_t>(index)) : Tensor());
    if (step == 0) {
      for (const Tensor& out : outputs) result.outputs.push_back(out.contiguous().clone());
    }
    adamw.step(grads);
  }
  for (const Tensor& p : params) result.parameters.push_back(p.clone());
  return result;
}

TEST(ThreadDeterminism, TrainingStepHasTheSameBitsForAnyThreadCount) {
  // GEMMs are split by Parallax only while OpenBLAS is single-threaded (dist::launch's rule).
  const int blas_before = kernels::blas_threads();
  kernels::set_blas_threads(1);
  const StepResult alone = train_two_steps(0);
  for (int threads : {1, 2, 3, 4}) {
    const StepResult run = train_two_steps(threads);
    ASSERT_EQ(run.outputs.size(), alone.outputs.size());
    for (size_t i = 0; i < alone.outputs.size(); ++i) {
      EXPECT_TRUE(same_bits(run.outputs[i], alone.outputs[i])) << "output " << i << " with " << threads << " threads";
    }
    ASSERT_EQ(run.parameters.size(), alone.parameters.size());
    for (size_t i = 0; i < alone.parameters.size(); ++i) {
      EXPECT_TRUE(same_bits(run.parameters[i], alone.parameters[i]))
          << "parameter " << i << " with " << threads << " threads";
    }
  }
  kernels::set_blas_threads(blas_before);
}

}  // namespace
}  // namespace px

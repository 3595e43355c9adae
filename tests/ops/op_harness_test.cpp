// Sweeps every registered op through its sample calls (tests/support/samples_*.cpp):
// inferred metas equal the kernel's outputs, meta inputs give the same metas
// without allocating, the cost is finite and non-negative, and the VJP matches
// central finite differences in float64.

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "parallax/ops/dispatch.h"
#include "support/op_samples.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::OpSample;

std::vector<TensorMeta> metas_of(const std::vector<Tensor>& tensors) {
  std::vector<TensorMeta> metas;
  for (const Tensor& tensor : tensors) metas.push_back(tensor.meta_info());
  return metas;
}

class OpHarness : public ::testing::TestWithParam<OpSample> {};

TEST_P(OpHarness, InferenceMatchesKernel) {
  const OpSample& sample = GetParam();
  const OpDef& op = builtin_registry().get(sample.op);
  std::vector<Tensor> outputs = call(op, sample.inputs, sample.attrs);
  std::vector<TensorMeta> inferred = infer_metas(op, metas_of(sample.inputs), sample.attrs);
  ASSERT_EQ(inferred.size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_TRUE(outputs[i].is_dense());
    EXPECT_EQ(outputs[i].meta_info(), inferred[i]) << "output " << i;
  }
}

TEST_P(OpHarness, MetaInputsGiveMetaOutputs) {
  const OpSample& sample = GetParam();
  std::vector<Tensor> meta_inputs;
  for (const Tensor& input : sample.inputs) meta_inputs.push_back(Tensor::meta(input.shape(), input.dtype()));
  CallOptions options{.meta = sample.inputs.empty()};
  std::vector<Tensor> outputs = call(sample.op, meta_inputs, sample.attrs, options);
  std::vector<Tensor> eager = call(sample.op, sample.inputs, sample.attrs);
  ASSERT_EQ(outputs.size(), eager.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_TRUE(outputs[i].is_meta());
    EXPECT_EQ(outputs[i].meta_info(), eager[i].meta_info());
  }
}

TEST_P(OpHarness, CostIsFiniteAndNonNegative) {
  const OpSample& sample = GetParam();
  const OpDef& op = builtin_registry().get(sample.op);
  Attrs filled = check_call(op, sample.inputs, sample.attrs);
  std::vector<TensorMeta> inputs = metas_of(sample.inputs);
  OpCost cost = op.cost(inputs, op.infer(inputs, filled), filled);
  for (double value : {cost.flops, cost.bytes_read, cost.bytes_written}) {
    EXPECT_TRUE(std::isfinite(value));
    EXPECT_GE(value, 0.0);
  }
}

TEST_P(OpHarness, VjpMatchesFiniteDifferences) {
  const OpSample& sample = GetParam();
  if (!sample.check_vjp) GTEST_SKIP() << sample.op << " is not differentiable";
  EXPECT_TRUE(testing::check_vjp(sample.op, sample.inputs, sample.attrs));
}

std::string sample_name(const ::testing::TestParamInfo<OpSample>& info) {
  std::string name = info.param.op + "_" + std::to_string(info.index);
  if (!info.param.note.empty()) name += "_" + info.param.note;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpHarness, ::testing::ValuesIn(testing::all_op_samples()), sample_name);

TEST(OpHarnessCoverage, EveryRegisteredOpHasASample) {
  std::set<std::string> sampled;
  for (const OpSample& sample : testing::all_op_samples()) sampled.insert(sample.op);
  for (const std::string& name : builtin_registry().names()) {
    // Collectives need ranks: tests/dist/comm_ops_test.cpp runs them on real groups.
    if (builtin_registry().get(name).traits.collective) continue;
    EXPECT_TRUE(sampled.count(name)) << "op '" << name << "' has no sample in tests/support/samples_*.cpp";
  }
}

TEST(OpHarnessCoverage, EveryDifferentiableOpHasAVjpSample) {
  std::set<std::string> checked;
  for (const OpSample& sample : testing::all_op_samples()) {
    if (sample.check_vjp) checked.insert(sample.op);
  }
  for (const std::string& name : builtin_registry().names()) {
    if (builtin_registry().get(name).vjp) {
      EXPECT_TRUE(checked.count(name)) << "op '" << name << "' has a VJP but no sample checks it";
    }
  }
}

TEST(OpHarnessCoverage, EverySampleNamesARegisteredOp) {
  for (const OpSample& sample : testing::all_op_samples()) {
    EXPECT_NE(builtin_registry().find(sample.op), nullptr) << sample.op;
  }
}

}  // namespace
}  // namespace px

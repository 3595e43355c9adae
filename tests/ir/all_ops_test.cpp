// Every registered op, through every IR facility: each sample call of
// tests/support/op_samples.h is traced into a graph, printed, parsed back
// (which must print identically), verified, and interpreted on the sample's
// inputs (which must equal the eager call) and on meta inputs.

#include <gtest/gtest.h>

#include <set>

#include "parallax/ir/interpreter.h"
#include "parallax/ir/parser.h"
#include "parallax/ir/printer.h"
#include "parallax/ir/tracer.h"
#include "parallax/ir/verifier.h"
#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::ir {
namespace {

using px::testing::all_close;
using px::testing::OpSample;

std::string sample_label(const OpSample& sample) {
  return sample.op + (sample.note.empty() ? "" : " (" + sample.note + ")") + " " + sample.attrs.str();
}

Graph trace_sample(const OpSample& sample) {
  Tracer tracer(sample.op);
  std::vector<Tensor> proxies;
  for (size_t i = 0; i < sample.inputs.size(); ++i) {
    proxies.push_back(tracer.add_input("in" + std::to_string(i), sample.inputs[i].meta_info()));
  }
  InterceptScope scope(tracer);
  tracer.set_outputs(call(sample.op, proxies, sample.attrs));
  return tracer.finish();
}

TEST(AllOps, SamplesCoverEveryRegisteredOp) {
  std::set<std::string> sampled;
  for (const OpSample& sample : px::testing::all_op_samples()) sampled.insert(sample.op);
  std::string missing;
  for (const std::string& name : builtin_registry().names()) {
    // Collectives need ranks: tests/dist/comm_ops_test.cpp round-trips them.
    if (builtin_registry().get(name).traits.collective) continue;
    if (!sampled.count(name)) missing += " " + name;
  }
  EXPECT_TRUE(missing.empty()) << "ops without a sample, so without an IR round-trip test:" << missing;
}

TEST(AllOps, TextRoundTripOfEverySample) {
  for (const OpSample& sample : px::testing::all_op_samples()) {
    SCOPED_TRACE(sample_label(sample));
    Graph graph = trace_sample(sample);
    std::string text = print(graph);
    Graph parsed = parse(text);
    EXPECT_EQ(print(parsed), text);
    EXPECT_EQ(verify_errors(parsed), std::vector<std::string>{});
    ASSERT_EQ(parsed.nodes().size(), 1u) << text;
    EXPECT_EQ(parsed.nodes()[0].attrs, graph.nodes()[0].attrs);
  }
}

TEST(AllOps, InterpretedSamplesEqualEagerCalls) {
  for (const OpSample& sample : px::testing::all_op_samples()) {
    SCOPED_TRACE(sample_label(sample));
    Graph graph = parse(print(trace_sample(sample)));
    std::vector<Tensor> eager = call(sample.op, sample.inputs, sample.attrs);
    std::vector<Tensor> interpreted = interpret(graph, sample.inputs);
    ASSERT_EQ(interpreted.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_TRUE(interpreted[i].is_dense());
      EXPECT_EQ(interpreted[i].meta_info(), eager[i].meta_info());
      EXPECT_TRUE(all_close(interpreted[i], eager[i], 0, 0)) << "output " << i;
    }
  }
}

TEST(AllOps, MetaInterpretationGivesTheRecordedTypes) {
  for (const OpSample& sample : px::testing::all_op_samples()) {
    SCOPED_TRACE(sample_label(sample));
    Graph graph = trace_sample(sample);
    std::vector<Tensor> metas;
    for (const Tensor& input : sample.inputs) metas.push_back(Tensor::meta(input.shape(), input.dtype()));
    std::vector<Tensor> outputs = interpret(graph, metas);
    ASSERT_EQ(outputs.size(), graph.outputs().size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(outputs[i].meta_info(), graph.meta(graph.outputs()[i]));
      if (!sample.inputs.empty()) {
        EXPECT_TRUE(outputs[i].is_meta());
      }
    }
  }
}

}  // namespace
}  // namespace px::ir

// Device-profile calibration: fitting op time models, saving profiles as JSON, and pricing ops
// with them.

#include "parallax/plan/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "parallax/core/error.h"
#include "parallax/ir/tracer.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/shape.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/device_profile.h"
#include "support/test_util.h"

namespace px::plan {
namespace {

using px::testing::error_message;

OpSample sample(std::string op, double flops, double bytes, double seconds) {
  OpSample s;
  s.op = std::move(op);
  s.cost.flops = flops;
  s.cost.bytes_read = bytes / 2;
  s.cost.bytes_written = bytes / 2;
  s.seconds = seconds;
  return s;
}

TEST(FitOpTiming, RecoversTheCoefficientsOfExactData) {
  const double per_call = 3e-6, per_flop = 1e-11, per_byte = 4e-11;
  std::vector<OpSample> samples;
  for (double flops : {1e5, 3e6, 2e8}) {
    for (double bytes : {4e3, 5e5, 7e7}) {
      samples.push_back(sample("matmul", flops, bytes, per_call + flops * per_flop + bytes * per_byte));
    }
  }
  const OpTiming timing = fit_op_timing(samples);
  EXPECT_NEAR(timing.per_call_s, per_call, 1e-3 * per_call);
  EXPECT_NEAR(timing.per_flop_s, per_flop, 1e-3 * per_flop);
  EXPECT_NEAR(timing.per_byte_s, per_byte, 1e-3 * per_byte);
  EXPECT_EQ(timing.samples, 9);
  EXPECT_EQ(timing.max_flops, 2e8);
  EXPECT_EQ(timing.max_bytes, 7e7);
}

TEST(FitOpTiming, CoefficientsStayNonNegative) {
  // Time falling with FLOPs: the unconstrained fit would give a negative per-FLOP cost.
  std::vector<OpSample> samples = {sample("add", 1e6, 1e6, 2e-4), sample("add", 2e6, 1e6, 1e-4),
                                   sample("add", 4e6, 2e6, 1.5e-4)};
  const OpTiming timing = fit_op_timing(samples);
  EXPECT_GE(timing.per_call_s, 0);
  EXPECT_GE(timing.per_flop_s, 0);
  EXPECT_GE(timing.per_byte_s, 0);
  EXPECT_GT(timing.seconds(samples[0].cost), 0);
}

TEST(FitOpTiming, ConstantTimesFitAPerCallCost) {
  std::vector<OpSample> samples = {sample("reshape", 0, 0, 2e-6), sample("reshape", 0, 0, 2e-6)};
  const OpTiming timing = fit_op_timing(samples);
  EXPECT_NEAR(timing.per_call_s, 2e-6, 1e-12);
  EXPECT_EQ(timing.per_flop_s, 0);
  EXPECT_EQ(timing.per_byte_s, 0);
}

TEST(FitOpTiming, BadSamplesAreValueErrors) {
  EXPECT_THROW(fit_op_timing({}), ValueError);
  std::vector<OpSample> zero = {sample("add", 1, 1, 0.0)};
  EXPECT_NE(error_message([&] { fit_op_timing(zero); }).find("add"), std::string::npos);
  std::vector<OpSample> nan = {sample("add", 1, 1, std::nan(""))};
  EXPECT_THROW(fit_op_timing(nan), ValueError);
}

TEST(Calibrate, FitsEachOpWithEnoughSamplesAndKeepsTheRooflineForTheRest) {
  std::vector<OpSample> samples;
  for (int i = 1; i <= 4; ++i) samples.push_back(sample("add", 0, 1e6 * i, 1e-6 + 1e6 * i * 1e-10));
  for (int i = 1; i <= 3; ++i) samples.push_back(sample("mul", 0, 1e6 * i, 3e-6 + 1e6 * i * 2e-10));
  samples.push_back(sample("exp", 0, 1e6, 1.0));  // one sample: below min_samples
  samples.push_back(sample("add", 0, 1e6, 0.0));  // unresolved by the clock: left out, not an error
  OpSample comm = sample("all_reduce", 0, 1e6, 1.0);
  comm.collective = true;
  for (int i = 0; i < 5; ++i) samples.push_back(comm);  // collectives are never fitted

  const DeviceProfile base = reference_cpu();
  const DeviceProfile calibrated = calibrate(base, samples);
  ASSERT_EQ(calibrated.op_timings.size(), 2u);
  const OpTiming& add = calibrated.op_timings.at(op_timing_key("add", DType::Float32));
  EXPECT_NEAR(add.per_call_s, 1e-6, 1e-9);
  EXPECT_NEAR(add.per_byte_s, 1e-10, 1e-13);
  EXPECT_EQ(add.samples, 4);
  EXPECT_NEAR(calibrated.op_overhead_s, 2e-6, 1e-9);  // the median per-call time of add and mul
  EXPECT_EQ(calibrated.name, "reference-cpu (calibrated)");
  EXPECT_EQ(calibrate(calibrated, samples).name, "reference-cpu (calibrated)");  // the suffix once

  OpCost cost{0, 5e5, 5e5};
  EXPECT_DOUBLE_EQ(priced_seconds("add", cost, false, DType::Float32, calibrated), add.seconds(cost));
  // Another dtype, or an op without a timing: the roofline plus the overhead.
  EXPECT_DOUBLE_EQ(priced_seconds("add", cost, false, DType::Float64, calibrated),
                   roofline_seconds(cost, false, DType::Float64, calibrated) + calibrated.op_overhead_s);
  EXPECT_DOUBLE_EQ(priced_seconds("exp", cost, false, DType::Float32, calibrated),
                   roofline_seconds(cost, false, DType::Float32, base) + calibrated.op_overhead_s);
  // The uncalibrated profile prices by the roofline alone.
  EXPECT_DOUBLE_EQ(priced_seconds("add", cost, false, DType::Float32, base),
                   roofline_seconds(cost, false, DType::Float32, base));

  EXPECT_EQ(calibrate(base, samples, CalibrationOptions{.min_samples = 1}).op_timings.size(), 3u);
}

TEST(OpProfile, SumsByOpLargestFirstWithATotal) {
  std::vector<OpSample> samples = {sample("add", 0, 8, 1e-3), sample("mul", 0, 8, 3e-3), sample("add", 0, 8, 1e-3)};
  OpSample comm = sample("all_gather", 0, 8, 5e-3);
  comm.collective = true;
  samples.push_back(comm);
  const std::vector<OpProfileRow> rows = op_profile(samples, reference_cpu());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].op, "mul:f32");
  EXPECT_EQ(rows[1].op, "add:f32");
  EXPECT_EQ(rows[1].nodes, 2);
  EXPECT_DOUBLE_EQ(rows[1].measured_s, 2e-3);
  EXPECT_EQ(rows[2].op, "total");
  EXPECT_EQ(rows[2].nodes, 3);
  EXPECT_DOUBLE_EQ(rows[2].measured_s, 5e-3);
  EXPECT_DOUBLE_EQ(rows[2].predicted_s, rows[0].predicted_s + rows[1].predicted_s);
  const std::string text = format_op_profile(rows);
  EXPECT_NE(text.find("mul:f32"), std::string::npos);
  EXPECT_NE(text.find("total"), std::string::npos);
}

TEST(OpSamples, OnePerNodeCostedOnItsMetas) {
  ir::Tracer tracer("g");
  Tensor x = tracer.add_input("x", TensorMeta{{4, 8}, DType::Float32});
  Tensor w = tracer.add_input("w", TensorMeta{{16, 8}, DType::Float32});
  {
    InterceptScope scope(tracer);
    tracer.set_outputs({px::exp(px::matmul(x, px::transpose(w, 0, 1)))});
  }
  const ir::Graph graph = tracer.finish();
  const size_t nodes = graph.nodes().size();
  std::vector<double> times(nodes, 1e-6);
  const std::vector<OpSample> samples = op_samples(graph, times);
  ASSERT_EQ(samples.size(), nodes);
  bool saw_matmul = false;
  for (const OpSample& s : samples) {
    EXPECT_EQ(s.seconds, 1e-6);
    EXPECT_FALSE(s.collective);
    if (s.op == "matmul") {
      saw_matmul = true;
      EXPECT_TRUE(s.matmul_like);
      EXPECT_EQ(s.cost.flops, 2.0 * 4 * 8 * 16);
    }
  }
  EXPECT_TRUE(saw_matmul);
  times.pop_back();
  EXPECT_NE(error_message([&] { op_samples(graph, times); }).find("times"), std::string::npos);
}

TEST(OptimizerUpdateSamples, OnePerShardCostedLikeThePlannerPricesIt) {
  const std::vector<TensorMeta> shards{TensorMeta{{32, 8}, DType::Float32}, TensorMeta{{4}, DType::Float64}};
  const std::vector<OpSample> samples = optimizer_update_samples(shards, std::vector<double>{2e-6, 1e-6}, 2);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].op, std::string(kOptimizerUpdateOp));
  EXPECT_EQ(samples[0].dtype, DType::Float32);
  EXPECT_EQ(samples[0].seconds, 2e-6);
  EXPECT_FALSE(samples[0].matmul_like);
  EXPECT_FALSE(samples[0].collective);
  EXPECT_EQ(samples[0].cost.bytes_read, 256 * 16.0);
  EXPECT_EQ(samples[1].dtype, DType::Float64);
  EXPECT_EQ(samples[1].cost.bytes_written, 4 * 24.0);
  // Float32 states beside float64 parameters.
  EXPECT_EQ(optimizer_update_samples(shards, std::vector<double>{2e-6, 1e-6}, 2, DType::Float32)[1].cost.bytes_written,
            4 * 16.0);
  // Enough of them calibrate the update like any op.
  std::vector<OpSample> many;
  for (int64_t n : {1000, 4000, 16000}) {
    OpSample sample = optimizer_update_samples(std::vector<TensorMeta>{TensorMeta{{n}, DType::Float32}},
                                               std::vector<double>{1e-6 + 1e-9 * static_cast<double>(n) * 28}, 2)[0];
    many.push_back(sample);
  }
  const DeviceProfile device = calibrate(reference_cpu(), many);
  EXPECT_EQ(device.op_timings.count(op_timing_key(kOptimizerUpdateOp, DType::Float32)), 1u);
  EXPECT_NE(error_message([&] { optimizer_update_samples(shards, std::vector<double>{1e-6}, 2); }).find("2 parameter"),
            std::string::npos);
  EXPECT_THROW(optimizer_update_samples(shards, std::vector<double>{1e-6, 1e-6}, -1), ValueError);
}

TEST(MedianNodeSeconds, PerNodeMedianOverRuns) {
  EXPECT_EQ(median_node_seconds({{1, 10}, {3, 30}, {2, 20}}), (std::vector<double>{2, 20}));
  EXPECT_EQ(median_node_seconds({{1}, {2}}), (std::vector<double>{1.5}));
  EXPECT_THROW(median_node_seconds({}), ValueError);
  EXPECT_THROW(median_node_seconds({{1, 2}, {1}}), ValueError);
}

DeviceProfile calibrated_cpu() {
  DeviceProfile device = reference_cpu();
  device.op_timings[op_timing_key("matmul", DType::Float32)] = OpTiming{1e-6, 1e-11, 2e-11, 12, 1e9, 1e8};
  device.op_timings[op_timing_key("add", DType::Float64)] = OpTiming{2e-6, 0, 5e-11, 4, 0, 1e7};
  device.op_overhead_s = 1.5e-6;
  device.name = "reference-cpu (calibrated)";
  return device;
}

TEST(DeviceProfileJson, RoundTripsEveryField) {
  for (const DeviceProfile& device : {h100(), reference_cpu(), calibrated_cpu()}) {
    const std::string text = device_profile_json(device);
    const DeviceProfile back = device_profile_from_json(text);
    EXPECT_EQ(device_profile_json(back), text) << device.name;
    EXPECT_EQ(back.name, device.name);
    EXPECT_EQ(back.op_timings, device.op_timings);
    EXPECT_EQ(back.intra_node_link, device.intra_node_link);
    EXPECT_EQ(back.inter_node_link, device.inter_node_link);
    EXPECT_EQ(back.memory_bytes_per_s, device.memory_bytes_per_s);
    EXPECT_EQ(back.devices_per_node, device.devices_per_node);
  }
}

TEST(DeviceProfileJson, BadFilesNameTheSourceAndField) {
  auto message = [](const std::string& text) {
    return error_message([&] { device_profile_from_json(text, "cpu.json"); });
  };
  EXPECT_NE(message("{").find("cpu.json: invalid JSON"), std::string::npos);
  EXPECT_NE(message("{\"format\": \"parallax-plan\"}").find("not a Parallax device profile"), std::string::npos);

  nlohmann::json good = nlohmann::json::parse(device_profile_json(calibrated_cpu()));
  auto with = [&](auto edit) {
    nlohmann::json copy = good;
    edit(copy);
    return message(copy.dump());
  };
  EXPECT_NE(with([](nlohmann::json& j) { j.erase("memory_bytes_per_s"); }).find("missing \"memory_bytes_per_s\""),
            std::string::npos);
  EXPECT_NE(with([](nlohmann::json& j) {
              j["intra_node_link"]["alpha_s"] = "x";
            }).find("profile.intra_node_link.alpha_s: expected a finite number"),
            std::string::npos);
  EXPECT_NE(with([](nlohmann::json& j) {
              j["op_timings"]["matmul:f32"]["per_flop_s"] = -1;
            }).find("profile.op_timings.matmul:f32: coefficients must be >= 0"),
            std::string::npos);
  EXPECT_NE(with([](nlohmann::json& j) { j["memory_bytes_per_s"] = 0; }).find("cpu.json: device profile"),
            std::string::npos);
  EXPECT_NE(with([](nlohmann::json& j) { j["version"] = 2; }).find("unsupported version 2"), std::string::npos);

  // Errors in the text say where: line and column of the value, as ParseError.
  const std::string text = "{\n  \"format\": \"parallax-device-profile\",\n  \"version\": 1,\n  \"name\": 7\n}\n";
  try {
    device_profile_from_json(text, "cpu.json");
    FAIL() << "parsed";
  } catch (const ParseError& error) {
    EXPECT_EQ(error.line(), 4);
    EXPECT_EQ(error.column(), 11);
    EXPECT_NE(std::string(error.what()).find("cpu.json: profile.name: expected a string"), std::string::npos)
        << error.what();
  }
}

TEST(DeviceProfileJson, DeviceProfileLoadsJsonFilesByPath) {
  const std::string path = px::testing::temp_path("profile.json");
  px::testing::spit(path, device_profile_json(calibrated_cpu()));
  const DeviceProfile loaded = device_profile(path);
  EXPECT_EQ(loaded.op_timings, calibrated_cpu().op_timings);
  std::filesystem::remove(path);
  EXPECT_NE(error_message([&] { device_profile(path); }).find("cannot open"), std::string::npos);
  EXPECT_NE(error_message([] { device_profile("tpu"); }).find(".json"), std::string::npos);
}

}  // namespace
}  // namespace px::plan

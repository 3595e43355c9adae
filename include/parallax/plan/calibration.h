#pragma once
// Calibrating a device profile to measured op times.
//
// A roofline at a device's peaks (plan/device_profile.h) ranks plans, but real kernels reach
// those peaks only on large GEMMs: small batched matmuls, normalizations and their backward
// passes run far below them, so absolute step times come out low. Calibration measures the ops
// on the device instead. Graphs run with node timing (runtime::Executor with
// RunOptions::time_nodes); each timed node becomes an OpSample (op, dtype, the cost facet's
// FLOPs and bytes on the node's metas, seconds); and each (op, dtype) seen often enough gets a
// time model
//   seconds = per_call + flops * per_flop + bytes * per_byte,
// coefficients >= 0, fitted by least squares with each node's error divided by the square root
// of its time. That sits between relative error, where the many small nodes (in cache, fast per
// byte) set the rates and large nodes come out low, and absolute error, where the few largest
// nodes decide and the per-call cost soaks up what is left. The planner then prices those ops
// with their model (priced_seconds).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parallax/ir/graph.h"
#include "parallax/plan/device_profile.h"

namespace px::plan {

struct OpSample {
  std::string op;
  DType dtype = DType::Float32;
  bool matmul_like = false;
  bool collective = false;
  OpCost cost;
  double seconds = 0;  // measured
};

// One sample per node of `graph`, costed on the node's recorded metas. Collectives are marked:
// calibration skips them and op_profile leaves them out (the plan prices communication on its
// own, from link profiles). `node_seconds`: one time per node, in graph order
// (ExecutionStats::node_seconds); ValueError when the counts differ.
std::vector<OpSample> op_samples(const ir::Graph& graph, std::span<const double> node_seconds);

// One sample per trained parameter shard (ParallelModule::trained_local_metas) from its measured
// update (last_update_seconds, or medians of them): op kOptimizerUpdateOp at the shard's dtype,
// costed by optimizer_update_cost with `states` states of `state_dtype` (nullopt: the shard's).
// ValueError when the counts differ or states < 0.
std::vector<OpSample> optimizer_update_samples(std::span<const TensorMeta> shards, std::span<const double> seconds,
                                               int64_t states, std::optional<DType> state_dtype = std::nullopt);

// Per node, the median over runs of its time: `runs` are ExecutionStats::node_seconds of
// several runs of one graph. ValueError when the runs differ in length or there are none.
std::vector<double> median_node_seconds(const std::vector<std::vector<double>>& runs);

// The fit of one op's time model to its samples (all of one op and dtype): minimizes the sum
// over samples of (predicted - measured)^2 / measured, over non-negative coefficients. ValueError
// for no samples or a sample with a time that is not positive and finite.
OpTiming fit_op_timing(std::span<const OpSample> samples);

struct CalibrationOptions {
  int64_t min_samples = 3;  // (op, dtype) pairs with fewer samples keep the roofline
};

// `base` with a fitted timing for every (op, dtype) of `samples` that has min_samples of them
// (collectives and samples without a positive, finite time left out)
// (replacing the ones `base` had for those keys), op_overhead_s set to the median fitted
// per-call time (what an op never measured still costs to dispatch), and " (calibrated)"
// appended to its name once.
DeviceProfile calibrate(DeviceProfile base, std::span<const OpSample> samples, CalibrationOptions options = {});

// Measured against predicted time, by op and dtype: what `parallax run --op-profile` prints.
struct OpProfileRow {
  std::string op;  // "matmul:f32"
  int64_t nodes = 0;
  double measured_s = 0;
  double predicted_s = 0;  // priced_seconds under the profile
};
// Rows sorted by measured time, largest first, and a last row "total".
std::vector<OpProfileRow> op_profile(std::span<const OpSample> samples, const DeviceProfile& device);
std::string format_op_profile(const std::vector<OpProfileRow>& rows);

}  // namespace px::plan

// Device-profile calibration (see plan/calibration.h).

#include "parallax/plan/calibration.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>

#include "parallax/core/error.h"
#include "parallax/plan/builder.h"

namespace px::plan {

namespace {

constexpr int kFeatures = 3;  // per call, per FLOP, per byte

std::array<double, kFeatures> features(const OpSample& sample) {
  return {1.0, sample.cost.flops, sample.cost.bytes_read + sample.cost.bytes_written};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Least squares over the features in `subset` (a bit mask) of the system rows[i] . x = targets[i],
// by the normal equations on columns scaled to unit norm. Returns false when the columns are
// (numerically) dependent.
bool solve_subset(const std::vector<std::array<double, kFeatures>>& rows, const std::vector<double>& targets,
                  unsigned subset, std::array<double, kFeatures>& x) {
  std::vector<int> columns;
  for (int j = 0; j < kFeatures; ++j) {
    if (subset & (1u << j)) columns.push_back(j);
  }
  const size_t k = columns.size();
  std::vector<double> scale(k, 0.0);
  for (size_t a = 0; a < k; ++a) {
    for (const auto& row : rows) scale[a] += row[columns[a]] * row[columns[a]];
    scale[a] = std::sqrt(scale[a]);
    if (!(scale[a] > 0)) return false;
  }
  // [A^T A | A^T 1] on scaled columns.
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t a = 0; a < k; ++a) {
      const double va = rows[i][columns[a]] / scale[a];
      for (size_t b = 0; b < k; ++b) m[a][b] += va * rows[i][columns[b]] / scale[b];
      m[a][k] += va * targets[i];
    }
  }
  for (size_t p = 0; p < k; ++p) {
    size_t pivot = p;
    for (size_t r = p + 1; r < k; ++r) {
      if (std::fabs(m[r][p]) > std::fabs(m[pivot][p])) pivot = r;
    }
    if (std::fabs(m[pivot][p]) < 1e-12) return false;
    std::swap(m[p], m[pivot]);
    for (size_t r = 0; r < k; ++r) {
      if (r == p) continue;
      const double factor = m[r][p] / m[p][p];
      for (size_t c = p; c <= k; ++c) m[r][c] -= factor * m[p][c];
    }
  }
  x.fill(0.0);
  for (size_t a = 0; a < k; ++a) x[static_cast<size_t>(columns[a])] = m[a][k] / m[a][a] / scale[a];
  return true;
}

}  // namespace

std::vector<OpSample> op_samples(const ir::Graph& graph, std::span<const double> node_seconds) {
  const std::vector<ir::Node>& nodes = graph.nodes();
  if (node_seconds.size() != nodes.size()) {
    throw ValueError("op_samples: graph '" + graph.name() + "' has " + std::to_string(nodes.size()) + " nodes, but " +
                     std::to_string(node_seconds.size()) + " times were given");
  }
  std::vector<OpSample> samples;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Node& node = nodes[i];
    if (!node.op) continue;
    std::vector<TensorMeta> inputs, outputs;
    for (ir::ValueId id : node.inputs) inputs.push_back(graph.meta(id));
    for (ir::ValueId id : node.outputs) outputs.push_back(graph.meta(id));
    samples.push_back(OpSample{node.op->name, op_dtype(inputs, outputs), node.op->traits.matmul_like,
                               node.op->traits.collective, op_cost(*node.op, inputs, outputs, node.attrs),
                               node_seconds[i]});
  }
  return samples;
}

std::vector<OpSample> optimizer_update_samples(std::span<const TensorMeta> shards, std::span<const double> seconds,
                                               int64_t states, std::optional<DType> state_dtype) {
  if (shards.size() != seconds.size()) {
    throw ValueError("optimizer_update_samples: " + std::to_string(shards.size()) + " parameter shards, but " +
                     std::to_string(seconds.size()) + " times were given");
  }
  if (states < 0) throw ValueError("optimizer_update_samples: states must be >= 0, got " + std::to_string(states));
  std::vector<OpSample> samples;
  for (size_t i = 0; i < shards.size(); ++i) {
    const DType dtype = shards[i].dtype;
    samples.push_back(OpSample{
        std::string(kOptimizerUpdateOp), dtype, false, false,
        optimizer_update_cost(numel(shards[i].shape), dtype, state_dtype.value_or(dtype), states), seconds[i]});
  }
  return samples;
}

std::vector<double> median_node_seconds(const std::vector<std::vector<double>>& runs) {
  if (runs.empty()) throw ValueError("median_node_seconds: no runs");
  std::vector<double> medians(runs.front().size());
  for (size_t node = 0; node < medians.size(); ++node) {
    std::vector<double> times;
    for (const std::vector<double>& run : runs) {
      if (run.size() != medians.size()) {
        throw ValueError("median_node_seconds: runs of " + std::to_string(medians.size()) + " and " +
                         std::to_string(run.size()) + " nodes");
      }
      times.push_back(run[node]);
    }
    medians[node] = median(std::move(times));
  }
  return medians;
}

OpTiming fit_op_timing(std::span<const OpSample> samples) {
  if (samples.empty()) throw ValueError("fit_op_timing: no samples");
  std::vector<std::array<double, kFeatures>> rows;
  std::vector<double> targets;
  OpTiming best;
  for (const OpSample& sample : samples) {
    if (!(sample.seconds > 0) || !std::isfinite(sample.seconds)) {
      throw ValueError("fit_op_timing: sample of " + sample.op + " has time " + std::to_string(sample.seconds) +
                       " s; times must be positive and finite");
    }
    std::array<double, kFeatures> row = features(sample);
    best.max_flops = std::max(best.max_flops, row[1]);
    best.max_bytes = std::max(best.max_bytes, row[2]);
    const double weight = 1 / std::sqrt(sample.seconds);
    for (double& value : row) value *= weight;
    rows.push_back(row);
    targets.push_back(sample.seconds * weight);
  }
  // Non-negative least squares by enumeration: with three coefficients, the optimum is the best
  // unconstrained fit over some subset of them whose coefficients all come out >= 0.
  double best_residual = std::numeric_limits<double>::infinity();
  for (unsigned subset = 1; subset < (1u << kFeatures); ++subset) {
    std::array<double, kFeatures> x{};
    if (!solve_subset(rows, targets, subset, x)) continue;
    if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
    double residual = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      double predicted = 0;
      for (int j = 0; j < kFeatures; ++j) predicted += rows[i][j] * x[j];
      residual += (predicted - targets[i]) * (predicted - targets[i]);
    }
    if (residual < best_residual) {
      best_residual = residual;
      best.per_call_s = x[0];
      best.per_flop_s = x[1];
      best.per_byte_s = x[2];
    }
  }
  best.samples = static_cast<int64_t>(samples.size());
  return best;
}

DeviceProfile calibrate(DeviceProfile base, std::span<const OpSample> samples, CalibrationOptions options) {
  std::map<std::string, std::vector<OpSample>> by_key;
  for (const OpSample& sample : samples) {
    // A time the clock could not resolve (0) says nothing about the op's rates.
    const bool measured = sample.seconds > 0 && std::isfinite(sample.seconds);
    if (!sample.collective && measured) by_key[op_timing_key(sample.op, sample.dtype)].push_back(sample);
  }
  std::vector<double> per_call;
  for (const auto& [key, group] : by_key) {
    if (static_cast<int64_t>(group.size()) < options.min_samples) continue;
    OpTiming timing = fit_op_timing(group);
    per_call.push_back(timing.per_call_s);
    base.op_timings[key] = timing;
  }
  if (!per_call.empty()) base.op_overhead_s = median(per_call);
  const std::string suffix = " (calibrated)";
  if (!base.name.ends_with(suffix)) base.name += suffix;
  return base;
}

std::vector<OpProfileRow> op_profile(std::span<const OpSample> samples, const DeviceProfile& device) {
  std::map<std::string, OpProfileRow> by_key;
  OpProfileRow total{"total", 0, 0, 0};
  for (const OpSample& sample : samples) {
    if (sample.collective) continue;
    const std::string key = op_timing_key(sample.op, sample.dtype);
    OpProfileRow& row = by_key[key];
    row.op = key;
    const double predicted = priced_seconds(sample.op, sample.cost, sample.matmul_like, sample.dtype, device);
    for (OpProfileRow* target : {&row, &total}) {
      target->nodes += 1;
      target->measured_s += sample.seconds;
      target->predicted_s += predicted;
    }
  }
  std::vector<OpProfileRow> rows;
  for (auto& [key, row] : by_key) rows.push_back(row);
  std::sort(rows.begin(), rows.end(), [](const OpProfileRow& a, const OpProfileRow& b) {
    return a.measured_s != b.measured_s ? a.measured_s > b.measured_s : a.op < b.op;
  });
  rows.push_back(total);
  return rows;
}

std::string format_op_profile(const std::vector<OpProfileRow>& rows) {
  std::ostringstream out;
  out << std::left << std::setw(28) << "op" << std::right << std::setw(7) << "nodes" << std::setw(14) << "measured ms"
      << std::setw(15) << "predicted ms" << std::setw(12) << "pred/meas\n";
  for (const OpProfileRow& row : rows) {
    out << std::left << std::setw(28) << row.op << std::right << std::setw(7) << row.nodes << std::fixed
        << std::setprecision(3) << std::setw(14) << row.measured_s * 1e3 << std::setw(15) << row.predicted_s * 1e3
        << std::setprecision(2) << std::setw(11);
    if (row.measured_s > 0) {
      out << row.predicted_s / row.measured_s;
    } else {
      out << "-";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace px::plan

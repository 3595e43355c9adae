#include "plan/plan_text.h"

#include <cmath>
#include <cstdio>

namespace px::plan::detail {

std::string format_significant(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

std::string format_bytes(double bytes) {
  const double magnitude = std::fabs(bytes);
  if (magnitude >= 1e12) return format_significant(bytes / 1e12) + " TB";
  if (magnitude >= 1e9) return format_significant(bytes / 1e9) + " GB";
  if (magnitude >= 1e6) return format_significant(bytes / 1e6) + " MB";
  if (magnitude >= 1e3) return format_significant(bytes / 1e3) + " KB";
  return format_significant(bytes) + " B";
}

std::string format_seconds(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (magnitude >= 1 || magnitude == 0) return format_significant(seconds) + " s";
  if (magnitude >= 1e-3) return format_significant(seconds * 1e3) + " ms";
  if (magnitude >= 1e-6) return format_significant(seconds * 1e6) + " us";
  return format_significant(seconds * 1e9) + " ns";
}

std::string format_share(double share) {
  if (share > 0) {
    const double inverse = 1.0 / share;
    const double rounded = std::round(inverse);
    if (rounded >= 1 && std::fabs(inverse - rounded) < 1e-9 * rounded) {
      return rounded == 1 ? "1" : "1/" + std::to_string(static_cast<int64_t>(rounded));
    }
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g", share);
  return buffer;
}

std::string graph_node_name(const ir::Graph& graph, int64_t node) {
  const ir::Node& n = graph.nodes()[static_cast<size_t>(node)];
  return n.op->name + " @" + (n.provenance.module_path.empty() ? "<root>" : n.provenance.module_path) + " (" +
         std::string(ir::phase_name(n.provenance.phase)) + ")";
}

}  // namespace px::plan::detail

#pragma once
// Sizes, times and names in the planner's reports and messages (internal).

#include <cstdint>
#include <string>

#include "parallax/autodiff/export.h"

namespace px::plan::detail {

// Decimal units, as the device profiles state capacities: "1.2 GB", "350 MB", "12 KB", "64 B".
std::string format_bytes(double bytes);
// "1.25 s", "3.4 ms", "12 us", "80 ns".
std::string format_seconds(double seconds);
// A share of a whole: "1/8" when it is the inverse of an integer, else "0.3125".
std::string format_share(double share);
// Three significant digits.
std::string format_significant(double value);
// "linear @model.layers.0.attention.wq (forward)", as the builder names problem nodes.
std::string graph_node_name(const ir::Graph& graph, int64_t node);

}  // namespace px::plan::detail

// Two plans of one program compared in words (see format_difference in plan/report.h).

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "parallax/plan/report.h"
#include "plan/plan_text.h"

namespace px::plan {

namespace {

// "layers.N.attention.wq.weight": the name with its layer index taken out, so that a stack of
// identical layers reads as one line.
std::string generic_name(const std::string& name) {
  static const std::regex index(R"(\.\d+\.)");
  return std::regex_replace(name, index, ".N.");
}

// "dim 0 over dp then tp, dim 1 over ep" / "replicated"; Partial dims named last.
std::string placement_words(const std::vector<Placement>& placements, const dist::DeviceMesh& mesh) {
  std::map<int64_t, std::vector<std::string>> by_dim;
  std::vector<std::string> partial;
  for (size_t d = 0; d < placements.size(); ++d) {
    const std::string name = mesh.dim_names()[d];
    if (const Shard* shard = std::get_if<Shard>(&placements[d])) by_dim[shard->dim].push_back(name);
    if (is_partial(placements[d])) partial.push_back(name);
  }
  std::string text;
  for (const auto& [dim, names] : by_dim) {
    text += (text.empty() ? "" : ", ") + std::string("dim ") + std::to_string(dim) + " over ";
    for (size_t k = 0; k < names.size(); ++k) text += (k == 0 ? "" : " then ") + names[k];
  }
  for (const std::string& name : partial) text += (text.empty() ? "" : ", ") + std::string("partial over ") + name;
  return text.empty() ? "replicated" : text;
}

struct Group {
  std::string name;
  TensorMeta meta;
  std::vector<Placement> ours;
  std::vector<Placement> theirs;
  int64_t members = 0;
  double our_bytes = 0;  // per device, summed over the members, with gradients and optimizer states
  double their_bytes = 0;
  double our_seconds = 0;  // per step, summed over the members
  double their_seconds = 0;
};

std::string signed_seconds(double seconds) {
  return (seconds < 0 ? "-" : "+") + detail::format_seconds(std::fabs(seconds));
}

std::string signed_bytes(double bytes) { return (bytes < 0 ? "-" : "+") + detail::format_bytes(std::fabs(bytes)); }

}  // namespace

std::string format_difference(const PlanReport& ours, const PlanReport& theirs, const dist::DeviceMesh& mesh) {
  const double ratio = theirs.step_seconds > 0 ? ours.step_seconds / theirs.step_seconds : 1;
  std::string text = ours.label + " against " + theirs.label + ": step " + detail::format_seconds(ours.step_seconds) +
                     " vs " + detail::format_seconds(theirs.step_seconds) + " (" + detail::format_significant(ratio) +
                     "x); compute " + detail::format_seconds(ours.compute_seconds) + " vs " +
                     detail::format_seconds(theirs.compute_seconds) + ", communication " +
                     detail::format_seconds(ours.communication_seconds) + " vs " +
                     detail::format_seconds(theirs.communication_seconds) + "; peak memory " +
                     detail::format_bytes(ours.memory.peak_bytes) + " vs " +
                     detail::format_bytes(theirs.memory.peak_bytes) + " per device\n";

  std::map<std::string, const ParameterRow*> their_rows;
  for (const ParameterRow& row : theirs.parameters) their_rows[row.name] = &row;
  std::vector<Group> groups;
  std::map<std::string, size_t> group_of;
  int64_t same = 0;
  for (const ParameterRow& row : ours.parameters) {
    auto found = their_rows.find(row.name);
    if (found == their_rows.end()) continue;
    const ParameterRow& other = *found->second;
    if (row.placements == other.placements) {
      ++same;
      continue;
    }
    const std::string name = generic_name(row.name);
    const std::string key = name + placements_str(row.placements) + placements_str(other.placements);
    auto [entry, fresh] = group_of.emplace(key, groups.size());
    if (fresh) groups.push_back(Group{name, row.meta, row.placements, other.placements});
    Group& group = groups[entry->second];
    group.members += 1;
    group.our_bytes += row.state_bytes;
    group.their_bytes += other.state_bytes;
    group.our_seconds += row.communication_seconds;
    group.their_seconds += other.communication_seconds;
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return std::fabs(a.their_seconds - a.our_seconds) > std::fabs(b.their_seconds - b.our_seconds);
  });
  if (groups.empty()) {
    text += "  every parameter is placed the same; the difference lies in the activations\n";
  } else {
    text += "  parameters placed differently (" + std::to_string(same) +
            " placed alike), largest communication difference first:\n";
  }
  size_t width = std::max(ours.label.size(), theirs.label.size()) + 2;
  for (const Group& group : groups) {
    text += "  " + group.name + (group.members > 1 ? " x" + std::to_string(group.members) : "") + " " +
            group.meta.str() + ":\n";
    auto line = [&](const std::string& label, const std::vector<Placement>& placements, double bytes, double seconds) {
      std::string row = "    " + label + std::string(width - label.size(), ' ') + placements_str(placements) + " " +
                        placement_words(placements, mesh) + ": " + detail::format_bytes(bytes) +
                        " per device with state, collectives " + detail::format_seconds(seconds) + " per step\n";
      return row;
    };
    text += line(ours.label, group.ours, group.our_bytes, group.our_seconds);
    text += line(theirs.label, group.theirs, group.their_bytes, group.their_seconds);
    text += "    " + theirs.label + " " + signed_seconds(group.their_seconds - group.our_seconds) + " per step, " +
            signed_bytes(group.their_bytes - group.our_bytes) + " per device\n";
  }
  std::map<std::pair<std::string, int64_t>, std::pair<const CollectiveRow*, const CollectiveRow*>> kinds;
  for (const CollectiveRow& row : ours.collectives) kinds[{row.kind, row.mesh_dim}].first = &row;
  for (const CollectiveRow& row : theirs.collectives) kinds[{row.kind, row.mesh_dim}].second = &row;
  std::string rows;
  for (const auto& [key, pair] : kinds) {
    const double our_seconds = pair.first != nullptr ? pair.first->seconds : 0;
    const double their_seconds = pair.second != nullptr ? pair.second->seconds : 0;
    const double our_bytes = pair.first != nullptr ? pair.first->bytes : 0;
    const double their_bytes = pair.second != nullptr ? pair.second->bytes : 0;
    if (our_bytes == their_bytes && our_seconds == their_seconds) continue;
    rows += "    " + key.first + " over " + mesh.dim_names()[static_cast<size_t>(key.second)] + ": " +
            detail::format_bytes(our_bytes) + " in " + detail::format_seconds(our_seconds) + " vs " +
            detail::format_bytes(their_bytes) + " in " + detail::format_seconds(their_seconds) + "\n";
  }
  if (!rows.empty()) text += "  collectives per step, " + ours.label + " vs " + theirs.label + ":\n" + rows;
  // What the parameters' moves leave: the activations the placements make move.
  auto activation_seconds = [](const PlanReport& report) {
    double seconds = report.communication_seconds;
    for (const ParameterRow& row : report.parameters) seconds -= row.communication_seconds;
    return std::max(seconds, 0.0);
  };
  text += "  of which moving parameters and their gradients " +
          detail::format_seconds(ours.communication_seconds - activation_seconds(ours)) + " vs " +
          detail::format_seconds(theirs.communication_seconds - activation_seconds(theirs)) + ", activations " +
          detail::format_seconds(activation_seconds(ours)) + " vs " +
          detail::format_seconds(activation_seconds(theirs)) + "\n";
  const double memory = theirs.memory.peak_bytes - ours.memory.peak_bytes;
  if (std::fabs(memory) > 0) {
    text += "  peak memory: " + theirs.label + " " + signed_bytes(memory) + " per device; at each plan's peak, " +
            "parameters with their state " + detail::format_bytes(ours.memory.parameter_bytes) + " vs " +
            detail::format_bytes(theirs.memory.parameter_bytes) + ", activations " +
            detail::format_bytes(ours.memory.activation_bytes) + " vs " +
            detail::format_bytes(theirs.memory.activation_bytes) + "\n";
  }
  return text;
}

}  // namespace px::plan

// IOPDDL JSON for ShardingProblem and solutions. Every malformed or inconsistent input is a
// ParseError naming the file, the JSON path of the offending value and its line and column, so
// that a 90 MB contest file with one bad row can be fixed without a debugger.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/json_locate.h"
#include "core/json_reader.h"
#include "parallax/core/error.h"
#include "parallax/plan/problem.h"
#include "plan/file_io.h"
#include "plan/number_format.h"

namespace px::plan {
namespace {

using nlohmann::json;

class Reader {
 public:
  Reader(const std::string& text, std::string source) : text_(text), source_(std::move(source)) {}

  json parse() const { return parse_json(text_, source_); }

  [[noreturn]] void fail(const JsonPath& path, const std::string& message) const {
    const TextPosition at = text_position(text_, locate_json_path(text_, path));
    throw ParseError(source_ + ": " + json_path_text(path) + ": " + message, at.line, at.column);
  }

  const json& member(const json& object, const JsonPath& path, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(path, std::string("missing \"") + key + "\"");
    return *it;
  }

  void expect_object(const json& value, const JsonPath& path) const {
    if (!value.is_object()) fail(path, "expected an object, got " + std::string(value.type_name()));
  }

  void expect_array(const json& value, const JsonPath& path) const {
    if (!value.is_array()) fail(path, "expected an array, got " + std::string(value.type_name()));
  }

  void expect_size(const json& value, const JsonPath& path, size_t expected, const std::string& what) const {
    expect_array(value, path);
    if (value.size() != expected) {
      fail(path, "expected " + std::to_string(expected) + " " + what + ", got " + std::to_string(value.size()));
    }
  }

  double number(const json& value, const JsonPath& path) const {
    if (!value.is_number()) fail(path, "expected a number, got " + std::string(value.type_name()));
    const double x = value.get<double>();
    if (!std::isfinite(x)) fail(path, "expected a finite number");
    return x;
  }

  int64_t integer(const json& value, const JsonPath& path) const {
    if (value.is_number_integer()) return value.get<int64_t>();
    if (value.is_number_unsigned() && value.get<uint64_t>() <= uint64_t{std::numeric_limits<int64_t>::max()}) {
      return static_cast<int64_t>(value.get<uint64_t>());
    }
    fail(path, "expected an integer, got " + value.dump());
  }

  std::vector<double> numbers(const json& value, const JsonPath& path) const {
    expect_array(value, path);
    std::vector<double> out;
    out.reserve(value.size());
    for (const json& x : value) {
      if (!x.is_number()) {
        JsonPath at = path;
        at.emplace_back(out.size());
        fail(at, "expected a number, got " + std::string(x.type_name()));
      }
      out.push_back(x.get<double>());
      if (!std::isfinite(out.back())) {
        JsonPath at = path;
        at.emplace_back(out.size() - 1);
        fail(at, "expected a finite number");
      }
    }
    return out;
  }

  std::string string(const json& value, const JsonPath& path) const {
    if (!value.is_string()) fail(path, "expected a string, got " + std::string(value.type_name()));
    return value.get<std::string>();
  }

  const std::string& source() const { return source_; }

 private:
  const std::string& text_;
  std::string source_;
};

JsonPath with(JsonPath path, JsonPathItem item) {
  path.push_back(std::move(item));
  return path;
}

void read_nodes(const Reader& in, const json& nodes, ShardingProblem& problem) {
  const JsonPath base{"problem", "nodes"};
  in.expect_object(nodes, base);
  const json& intervals = in.member(nodes, base, "intervals");
  const JsonPath intervals_path = with(base, "intervals");
  in.expect_array(intervals, intervals_path);
  const size_t count = intervals.size();
  const json& costs = in.member(nodes, base, "costs");
  in.expect_size(costs, with(base, "costs"), count, "entries (one per interval)");
  const json& usages = in.member(nodes, base, "usages");
  in.expect_size(usages, with(base, "usages"), count, "entries (one per interval)");
  problem.nodes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    ProblemNode& node = problem.nodes[i];
    const JsonPath interval_path = with(intervals_path, i);
    in.expect_size(intervals[i], interval_path, 2, "values ([start, end))");
    node.start = in.integer(intervals[i][0], with(interval_path, size_t{0}));
    node.end = in.integer(intervals[i][1], with(interval_path, size_t{1}));
    if (node.end < node.start) {
      in.fail(interval_path, "the interval [" + std::to_string(node.start) + ", " + std::to_string(node.end) +
                                 ") ends before it starts");
    }
    const JsonPath cost_path = with(with(base, "costs"), i);
    node.costs = in.numbers(costs[i], cost_path);
    if (node.costs.empty()) in.fail(cost_path, "a node needs at least one strategy");
    node.usages = in.numbers(usages[i], with(with(base, "usages"), i));
    if (node.usages.size() != node.costs.size()) {
      in.fail(with(with(base, "usages"), i), "expected " + std::to_string(node.costs.size()) +
                                                 " values (one per strategy), got " +
                                                 std::to_string(node.usages.size()));
    }
  }
  if (const auto it = nodes.find("names"); it != nodes.end()) {
    const JsonPath path = with(base, "names");
    in.expect_size(*it, path, count, "names (one per node)");
    for (size_t i = 0; i < count; ++i) problem.nodes[i].name = in.string((*it)[i], with(path, i));
  }
  if (const auto it = nodes.find("strategy_names"); it != nodes.end()) {
    const JsonPath path = with(base, "strategy_names");
    in.expect_size(*it, path, count, "lists (one per node)");
    for (size_t i = 0; i < count; ++i) {
      const JsonPath node_path = with(path, i);
      in.expect_size((*it)[i], node_path, problem.nodes[i].costs.size(), "names (one per strategy)");
      std::vector<std::string> names;
      for (size_t s = 0; s < (*it)[i].size(); ++s) names.push_back(in.string((*it)[i][s], with(node_path, s)));
      // A node written without names has empty ones (the list must have one per strategy).
      if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return !n.empty(); })) {
        problem.nodes[i].strategy_names = std::move(names);
      }
    }
  }
}

void read_edges(const Reader& in, const json& edges, ShardingProblem& problem) {
  const JsonPath base{"problem", "edges"};
  in.expect_object(edges, base);
  const json& ends = in.member(edges, base, "nodes");
  const JsonPath ends_path = with(base, "nodes");
  in.expect_array(ends, ends_path);
  const json& costs = in.member(edges, base, "costs");
  const JsonPath costs_path = with(base, "costs");
  in.expect_size(costs, costs_path, ends.size(), "entries (one per edge)");
  const auto num_nodes = static_cast<int64_t>(problem.nodes.size());
  problem.edges.resize(ends.size());
  for (size_t e = 0; e < ends.size(); ++e) {
    ProblemEdge& edge = problem.edges[e];
    const JsonPath pair_path = with(ends_path, e);
    in.expect_size(ends[e], pair_path, 2, "node indices ([from, to])");
    edge.from = in.integer(ends[e][0], with(pair_path, size_t{0}));
    edge.to = in.integer(ends[e][1], with(pair_path, size_t{1}));
    for (size_t side = 0; side < 2; ++side) {
      const int64_t node = side == 0 ? edge.from : edge.to;
      if (node < 0 || node >= num_nodes) {
        in.fail(with(pair_path, side),
                "node " + std::to_string(node) + " does not exist (there are " + std::to_string(num_nodes) + " nodes)");
      }
    }
    if (edge.from == edge.to) in.fail(pair_path, "a self edge on node " + std::to_string(edge.from));
    const size_t rows = problem.nodes[edge.from].costs.size();
    const size_t columns = problem.nodes[edge.to].costs.size();
    const JsonPath cost_path = with(costs_path, e);
    in.expect_array(costs[e], cost_path);
    if (costs[e].size() != rows * columns) {
      in.fail(cost_path, "expected " + std::to_string(rows * columns) + " values (" + std::to_string(rows) + " x " +
                             std::to_string(columns) + " strategies of nodes " + std::to_string(edge.from) + " and " +
                             std::to_string(edge.to) + "), got " + std::to_string(costs[e].size()));
    }
    edge.costs = in.numbers(costs[e], cost_path);
  }
}

json numbers_json(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) out.push_back(number_json<json>(v));
  return out;
}

}  // namespace

ShardingProblem parse_problem(const std::string& json_text, const std::string& source) {
  const Reader in(json_text, source);
  const json root = in.parse();
  in.expect_object(root, {});
  const json& body = in.member(root, {}, "problem");
  const JsonPath base{"problem"};
  in.expect_object(body, base);
  ShardingProblem problem;
  if (const auto it = body.find("name"); it != body.end()) problem.name = in.string(*it, with(base, "name"));
  read_nodes(in, in.member(body, base, "nodes"), problem);
  if (const auto it = body.find("edges"); it != body.end()) read_edges(in, *it, problem);
  if (const auto it = body.find("usage_limit"); it != body.end() && !it->is_null()) {
    problem.usage_limit = in.number(*it, with(base, "usage_limit"));
  }
  try {
    problem.validate();
  } catch (const ValueError& error) {
    // The checks above cover validate(); this keeps a future rule from escaping as a ValueError.
    in.fail(base, error.what());
  }
  return problem;
}

ShardingProblem read_problem(const std::string& path) { return parse_problem(read_text_file(path), path); }

std::string problem_to_json(const ShardingProblem& problem) {
  problem.validate();
  json intervals = json::array();
  json costs = json::array();
  json usages = json::array();
  bool any_name = false;
  bool any_strategy_names = false;
  for (const ProblemNode& node : problem.nodes) {
    intervals.push_back({node.start, node.end});
    costs.push_back(numbers_json(node.costs));
    usages.push_back(numbers_json(node.usages));
    any_name = any_name || !node.name.empty();
    any_strategy_names = any_strategy_names || !node.strategy_names.empty();
  }
  json nodes = {{"intervals", std::move(intervals)}, {"costs", std::move(costs)}, {"usages", std::move(usages)}};
  if (any_name) {
    json names = json::array();
    for (const ProblemNode& node : problem.nodes) names.push_back(node.name);
    nodes["names"] = std::move(names);
  }
  if (any_strategy_names) {
    json names = json::array();
    for (const ProblemNode& node : problem.nodes) {
      if (node.strategy_names.empty()) {
        names.push_back(std::vector<std::string>(node.costs.size()));
      } else {
        names.push_back(node.strategy_names);
      }
    }
    nodes["strategy_names"] = std::move(names);
  }
  json ends = json::array();
  json edge_costs = json::array();
  for (const ProblemEdge& edge : problem.edges) {
    ends.push_back({edge.from, edge.to});
    edge_costs.push_back(numbers_json(edge.costs));
  }
  json body = {{"name", problem.name},
               {"nodes", std::move(nodes)},
               {"edges", {{"nodes", std::move(ends)}, {"costs", std::move(edge_costs)}}}};
  if (problem.usage_limit) body["usage_limit"] = number_json<json>(*problem.usage_limit);
  return json{{"problem", std::move(body)}}.dump() + "\n";
}

void write_problem(const ShardingProblem& problem, const std::string& path) {
  write_text_file(path, problem_to_json(problem));
}

Choice read_choice(const std::string& path) {
  const std::string text = read_text_file(path);
  const Reader in(text, path);
  const json root = in.parse();
  in.expect_object(root, {});
  const json& strategies = in.member(root, {}, "strategies");
  const JsonPath base{"strategies"};
  in.expect_array(strategies, base);
  Choice choice;
  choice.reserve(strategies.size());
  for (size_t i = 0; i < strategies.size(); ++i) {
    const int64_t s = in.integer(strategies[i], with(base, i));
    if (s < 0) in.fail(with(base, i), "expected a strategy index >= 0, got " + std::to_string(s));
    choice.push_back(s);
  }
  return choice;
}

void write_choice(const ShardingProblem& problem, const Choice& choice, const std::string& path) {
  const json out = {{"name", problem.name}, {"strategies", choice}};
  write_text_file(path, out.dump() + "\n");
}

}  // namespace px::plan

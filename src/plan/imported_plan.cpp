// Parameter placements from another planner, priced as a constraint set (see plan/imported_plan.h).

#include "parallax/plan/imported_plan.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/json_locate.h"
#include "core/json_reader.h"
#include "parallax/core/error.h"
#include "parallax/plan/constraints.h"
#include "plan/file_io.h"

namespace px::plan {

namespace {

// A problem found while reading or resolving placements, as a bare message: the public functions
// raise it as a ValueError, with the file and tensor it concerns where they know them.
struct PlacementProblem {
  std::string message;
};

std::string trim(std::string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])) != 0) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) --end;
  return std::string(text.substr(begin, end - begin));
}

// Splits "a(b, c), d" at the commas outside parentheses and brackets.
std::vector<std::string> split_top_level(std::string_view text, std::string_view whole) {
  std::vector<std::string> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') {
      if (--depth < 0) throw PlacementProblem{"placements '" + std::string(whole) + "': unbalanced ')'"};
    }
    if (c == ',' && depth == 0) {
      parts.push_back(trim(text.substr(start, k - start)));
      start = k + 1;
    }
  }
  if (depth != 0) throw PlacementProblem{"placements '" + std::string(whole) + "': unbalanced '('"};
  const std::string last = trim(text.substr(start));
  if (!last.empty() || !parts.empty()) parts.push_back(last);
  return parts;
}

int64_t parse_integer(const std::string& text, std::string_view item) {
  if (text.empty() || text.size() > 9 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    throw PlacementProblem{"placement '" + std::string(item) + "': '" + text + "' is not a non-negative integer"};
  }
  return std::stoll(text);
}

// The value of `key` among "dim=0, sf=8" (a bare first argument counts as `positional`).
std::map<std::string, std::string> arguments(std::string_view inside, std::string_view item,
                                             std::string_view positional) {
  std::map<std::string, std::string> result;
  for (const std::string& part : split_top_level(inside, item)) {
    if (part.empty()) throw PlacementProblem{"placement '" + std::string(item) + "': an empty argument"};
    const size_t equals = part.find('=');
    const std::string key = equals == std::string::npos ? std::string(positional) : trim(part.substr(0, equals));
    const std::string value = equals == std::string::npos ? part : trim(part.substr(equals + 1));
    if (!result.emplace(key, value).second) {
      throw PlacementProblem{"placement '" + std::string(item) + "': '" + key + "' given twice"};
    }
  }
  return result;
}

ForeignPlacement parse_one(const std::string& item) {
  const size_t open = item.find('(');
  const std::string name = trim(item.substr(0, open));
  if (open == std::string::npos) {
    if (name == "R") return ForeignPlacement{};
    if (name == "P") return ForeignPlacement{ForeignPlacement::Kind::Partial};
    throw PlacementProblem{"placement '" + item +
                           "': expected Shard(dim=D), _StridedShard(dim=D, sf=K), Replicate() or " +
                           "Partial(), or S(D), R, P(sum)"};
  }
  if (item.back() != ')') throw PlacementProblem{"placement '" + item + "': text after the closing ')'"};
  const std::string inside = item.substr(open + 1, item.size() - open - 2);
  auto args = arguments(inside, item, name == "Partial" || name == "P" ? "reduce_op" : "dim");
  auto take = [&](const std::string& key) -> std::string {
    auto found = args.find(key);
    if (found == args.end()) throw PlacementProblem{"placement '" + item + "': missing '" + key + "'"};
    std::string value = found->second;
    args.erase(found);
    return value;
  };
  ForeignPlacement placement;
  if (name == "Replicate") {
    placement.kind = ForeignPlacement::Kind::Replicate;
  } else if (name == "Shard" || name == "S") {
    placement.kind = ForeignPlacement::Kind::Shard;
    placement.dim = parse_integer(take("dim"), item);
  } else if (name == "_StridedShard") {
    placement.kind = ForeignPlacement::Kind::StridedShard;
    placement.dim = parse_integer(take("dim"), item);
    placement.split_factor = parse_integer(take("sf"), item);
    if (placement.split_factor < 1) throw PlacementProblem{"placement '" + item + "': sf must be at least 1"};
  } else if (name == "Partial" || name == "P") {
    placement.kind = ForeignPlacement::Kind::Partial;
    if (args.count("reduce_op") != 0) {
      std::string op = take("reduce_op");
      op.erase(std::remove(op.begin(), op.end(), '\''), op.end());
      op.erase(std::remove(op.begin(), op.end(), '"'), op.end());
      if (op == "sum") {
        placement.reduce = ReduceOp::Sum;
      } else if (op == "avg") {
        placement.reduce = ReduceOp::Avg;
      } else if (op == "max") {
        placement.reduce = ReduceOp::Max;
      } else if (op == "min") {
        placement.reduce = ReduceOp::Min;
      } else {
        throw PlacementProblem{"placement '" + item + "': unknown reduction '" + op + "' (sum, avg, max, min)"};
      }
    }
  } else {
    throw PlacementProblem{"placement '" + item + "': unknown placement '" + name +
                           "' (Shard, _StridedShard, Replicate, Partial)"};
  }
  if (!args.empty()) throw PlacementProblem{"placement '" + item + "': unknown argument '" + args.begin()->first + "'"};
  return placement;
}

std::string label_of(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  for (const char* suffix : {".gz", ".json"}) {
    const std::string s = suffix;
    if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0) {
      stem.resize(stem.size() - s.size());
    }
  }
  return stem;
}

[[noreturn]] void fail_at(std::string_view text, std::string_view source, const JsonPath& path,
                          const std::string& message) {
  const TextPosition position = text_position(text, locate_json_path(text, path));
  throw ValueError(std::string(source) + ":" + std::to_string(position.line) + ":" + std::to_string(position.column) +
                   ": " + json_path_text(path) + ": " + message);
}

// The parameter inputs whose fqn is `name` or ends in "." + `name`.
std::vector<int64_t> matching_parameters(const JointProgram& program, const std::string& name) {
  std::vector<int64_t> exact;
  std::vector<int64_t> suffix;
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    if (program.inputs[i].underlying_kind() != InputDescriptor::Kind::Param) continue;
    for (const std::string& fqn : program.inputs[i].fqns) {
      if (fqn == name) {
        exact.push_back(static_cast<int64_t>(i));
        break;
      }
      if (fqn.size() > name.size() && fqn.compare(fqn.size() - name.size(), name.size(), name) == 0 &&
          fqn[fqn.size() - name.size() - 1] == '.') {
        suffix.push_back(static_cast<int64_t>(i));
        break;
      }
    }
  }
  return exact.empty() ? suffix : exact;
}

std::string some_parameter_names(const JointProgram& program) {
  std::string names;
  int shown = 0;
  for (const InputDescriptor& input : program.inputs) {
    if (input.underlying_kind() != InputDescriptor::Kind::Param || input.fqns.empty()) continue;
    if (shown++ == 4) return names + ", ...";
    names += (names.empty() ? "" : ", ") + input.fqns.front();
  }
  return names;
}

}  // namespace

namespace {

std::vector<ForeignPlacement> parse_text(std::string_view text) {
  std::string body = trim(text);
  if (body.empty()) throw PlacementProblem{"placements: empty text"};
  // One layer of enclosing "(...)" or "[...]" groups the mesh dims; "Shard(dim=0)" alone is one dim.
  if ((body.front() == '(' && body.back() == ')') || (body.front() == '[' && body.back() == ']')) {
    body = body.substr(1, body.size() - 2);
  }
  std::vector<std::string> items = split_top_level(body, text);
  if (items.size() > 1 && items.back().empty()) items.pop_back();  // Python's "(Shard(dim=0),)"
  std::vector<ForeignPlacement> placements;
  for (const std::string& item : items) {
    if (item.empty()) throw PlacementProblem{"placements '" + std::string(text) + "': an empty entry"};
    placements.push_back(parse_one(item));
  }
  if (placements.empty()) throw PlacementProblem{"placements '" + std::string(text) + "': no placement"};
  return placements;
}

}  // namespace

std::vector<ForeignPlacement> parse_foreign_placements(std::string_view text) {
  try {
    return parse_text(text);
  } catch (const PlacementProblem& problem) {
    throw ValueError(problem.message);
  }
}

ImportedPlacements parse_imported_placements(std::string_view json_text, std::string_view source,
                                             std::string_view default_label) {
  nlohmann::json json;
  try {
    json = parse_json(json_text, std::string(source));
  } catch (const ParseError& error) {
    // This reader's errors are ValueErrors that start "<source>:<line>:<column>: ".
    throw ValueError(std::string(source) + ":" + std::to_string(error.line()) + ":" + std::to_string(error.column()) +
                     ": not JSON (" + error.detail() + ")");
  }
  if (!json.is_object()) fail_at(json_text, source, {}, "expected an object with \"placements\"");
  ImportedPlacements imported;
  imported.source = std::string(source);
  imported.label = std::string(default_label);
  if (json.contains("label")) {
    if (!json["label"].is_string() || json["label"].get<std::string>().empty()) {
      fail_at(json_text, source, {std::string("label")}, "expected a non-empty string");
    }
    imported.label = json["label"].get<std::string>();
  }
  if (!json.contains("placements")) fail_at(json_text, source, {}, "missing \"placements\"");
  const nlohmann::json& map = json["placements"];
  if (!map.is_object() || map.empty()) {
    fail_at(json_text, source, {std::string("placements")}, "expected a non-empty object of name: placements");
  }
  for (const auto& [name, value] : map.items()) {
    const JsonPath path{std::string("placements"), name};
    ImportedParameter parameter;
    parameter.name = name;
    try {
      if (value.is_string()) {
        parameter.text = value.get<std::string>();
      } else if (value.is_array() && !value.empty() &&
                 std::all_of(value.begin(), value.end(), [](const nlohmann::json& v) { return v.is_string(); })) {
        for (const nlohmann::json& item : value) {
          parameter.text += (parameter.text.empty() ? "(" : ", ") + item.get<std::string>();
        }
        parameter.text += ")";
      } else {
        fail_at(json_text, source, path, "expected a placements text or a list of placement texts");
      }
      parameter.placements = parse_text(parameter.text);
    } catch (const PlacementProblem& problem) {
      fail_at(json_text, source, path, problem.message);
    }
    imported.parameters.push_back(std::move(parameter));
  }
  return imported;
}

ImportedPlacements read_imported_placements(const std::string& path) {
  return parse_imported_placements(read_text_file(path), path, label_of(path));
}

namespace {

std::vector<Placement> resolve(const std::vector<ForeignPlacement>& placements, const TensorMeta& meta,
                               const dist::DeviceMesh& mesh, std::string* note) {
  const int64_t ndim = mesh.ndim();
  if (static_cast<int64_t>(placements.size()) != ndim) {
    throw PlacementProblem{"placements: " + std::to_string(placements.size()) + " given for a mesh of " +
                           std::to_string(ndim) + " dims (" + mesh.str() + ")"};
  }
  auto check_dim = [&](int64_t dim) {
    if (dim >= meta.ndim()) {
      throw PlacementProblem{"placements: tensor dim " + std::to_string(dim) + " out of range for " + meta.str()};
    }
  };
  std::vector<Placement> result(placements.size(), Replicate{});
  for (size_t d = 0; d < placements.size(); ++d) {
    const ForeignPlacement& placement = placements[d];
    switch (placement.kind) {
      case ForeignPlacement::Kind::Replicate:
        break;
      case ForeignPlacement::Kind::Partial:
        result[d] = Partial{placement.reduce};
        break;
      case ForeignPlacement::Kind::Shard:
        check_dim(placement.dim);
        result[d] = Shard{placement.dim};
        break;
      case ForeignPlacement::Kind::StridedShard:
        check_dim(placement.dim);
        break;  // below, once every plain Shard is known
    }
  }
  for (size_t d = 0; d < placements.size(); ++d) {
    const ForeignPlacement& placement = placements[d];
    if (placement.kind != ForeignPlacement::Kind::StridedShard) continue;
    int64_t later = 1;
    for (size_t e = d + 1; e < placements.size(); ++e) {
      if (placements[e].kind == ForeignPlacement::Kind::Shard && placements[e].dim == placement.dim) {
        later *= mesh.size(static_cast<int64_t>(e));
      }
    }
    if (later != placement.split_factor) {
      throw PlacementProblem{"placements: _StridedShard(dim=" + std::to_string(placement.dim) +
                             ", sf=" + std::to_string(placement.split_factor) + ") on mesh dim " + std::to_string(d) +
                             " needs later mesh dims of " + std::to_string(placement.split_factor) +
                             " devices sharding dim " + std::to_string(placement.dim) + ", found " +
                             std::to_string(later)};
    }
    // The cost twin: another tensor dim, sharded by nothing else, that mesh dim d divides.
    const int64_t devices = mesh.size(static_cast<int64_t>(d));
    int64_t twin = -1;
    for (int64_t e = meta.ndim() - 1; e >= 0 && twin < 0; --e) {
      if (e == placement.dim || meta.shape[static_cast<size_t>(e)] % devices != 0) continue;
      const bool taken = std::any_of(result.begin(), result.end(), [&](const Placement& p) {
        const Shard* shard = std::get_if<Shard>(&p);
        return shard != nullptr && shard->dim == e;
      });
      if (!taken) twin = e;
    }
    const std::string strided = "_StridedShard(dim=" + std::to_string(placement.dim) +
                                ", sf=" + std::to_string(placement.split_factor) + ") on mesh dim " + std::to_string(d);
    if (twin >= 0) {
      result[d] = Shard{twin};
      if (note != nullptr) {
        *note = strided + " priced as S(" + std::to_string(twin) +
                ") there: the same bytes per device, gathered back over that mesh dim alone";
      }
    } else {
      result[d] = Shard{placement.dim};
      if (note != nullptr) {
        *note = strided + " priced as S(" + std::to_string(placement.dim) + ") nested in mesh order (no other dim of " +
                meta.str() + " splits over it)";
      }
    }
  }
  return result;
}

}  // namespace

std::vector<Placement> resolve_placements(const std::vector<ForeignPlacement>& placements, const TensorMeta& meta,
                                          const dist::DeviceMesh& mesh, std::string* note) {
  try {
    return resolve(placements, meta, mesh, note);
  } catch (const PlacementProblem& problem) {
    throw ValueError(problem.message);
  }
}

Baseline import_baseline(const ImportedPlacements& imported, const JointProgram& program, const PlanProblem& plan) {
  if (program.inputs.size() != plan.input_node.size()) {
    throw ValueError("import_baseline: the program is not the one the problem '" + plan.problem.name +
                     "' was built from");
  }
  Baseline baseline;
  baseline.kind = BaselineKind::Imported;
  baseline.name = imported.label;
  baseline.description =
      imported.label + "'s parameter placements from " + imported.source + ", everything else placed by the solver";
  std::map<int64_t, std::pair<std::string, std::vector<Placement>>> by_node;  // problem node -> first setter
  std::map<std::string, int64_t> noted;                                       // note -> parameters it applies to
  std::vector<bool> placed(program.inputs.size(), false);
  for (const ImportedParameter& parameter : imported.parameters) {
    const std::string where = imported.source + ": " + parameter.name;
    const std::vector<int64_t> matches = matching_parameters(program, parameter.name);
    if (matches.empty()) {
      throw ValueError(
          where + ": no parameter of the model has that name (its parameters: " + some_parameter_names(program) + ")");
    }
    if (matches.size() > 1) {
      throw ValueError(where + ": names " + std::to_string(matches.size()) + " parameters (" +
                       program.inputs[static_cast<size_t>(matches[0])].fqns.front() + ", " +
                       program.inputs[static_cast<size_t>(matches[1])].fqns.front() + ", ...); give its full name");
    }
    const int64_t input = matches.front();
    const TensorMeta& meta = program.graph.meta(program.graph.inputs()[static_cast<size_t>(input)]);
    std::string note;
    std::vector<Placement> placements;
    try {
      placements = resolve(parameter.placements, meta, plan.mesh, &note);
    } catch (const PlacementProblem& problem) {
      throw ValueError(where + " " + meta.str() + ": " + problem.message);
    }
    if (!find_input_strategy(plan, input, placements)) {
      throw ValueError(where + " " + meta.str() + ": " + placements_str(placements) +
                       " is not among the placements the planner offers for it on " + plan.mesh.str());
    }
    const int64_t node = plan.input_node[static_cast<size_t>(input)];
    auto [entry, fresh] = by_node.emplace(node, std::make_pair(parameter.name, placements));
    if (!fresh && entry->second.second != placements) {
      throw ValueError(where + ": " + placements_str(placements) + " where " + entry->second.first + " has " +
                       placements_str(entry->second.second) +
                       ", and the problem plans both as one repeated layer; plan without clustering "
                       "(--no-cluster) to price layers placed differently");
    }
    if (!note.empty()) ++noted[note];
    placed[static_cast<size_t>(input)] = true;
    baseline.constraints.inputs.push_back(InputConstraint{input, exactly(placements)});
  }
  for (const auto& [note, count] : noted) {
    baseline.notes.push_back(note + (count > 1 ? " (" + std::to_string(count) + " parameters)" : ""));
  }
  int64_t free_parameters = 0;
  for (size_t i = 0; i < program.inputs.size(); ++i)
    free_parameters += program.inputs[i].underlying_kind() == InputDescriptor::Kind::Param && !placed[i];
  if (free_parameters > 0) {
    baseline.notes.push_back(std::to_string(free_parameters) + " parameters not in " + imported.source +
                             " placed by the solver");
  }
  return baseline;
}

BaselineResult solve_imported(const ImportedPlacements& imported, const JointProgram& program, const PlanProblem& plan,
                              const PlanConstraints& common, const SolveOptions& options) {
  BaselineResult result;
  result.baseline = import_baseline(imported, program, plan);
  PlanConstraints constraints = common;
  constraints.inputs.insert(constraints.inputs.end(), result.baseline.constraints.inputs.begin(),
                            result.baseline.constraints.inputs.end());
  try {
    result.plan = solve_plan(program, plan, constraints, options, result.baseline.name);
    for (const std::string& note : result.baseline.notes) result.plan->notes.push_back(note);
  } catch (const InfeasiblePlan& error) {
    result.error = error.what();
  }
  return result;
}

}  // namespace px::plan

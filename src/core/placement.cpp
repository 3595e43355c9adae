#include "parallax/core/placement.h"

#include <charconv>

#include "parallax/core/error.h"

namespace px {

std::string reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

namespace {

struct PlacementPrinter {
  std::string operator()(const Replicate&) const { return "R"; }
  std::string operator()(const Shard& shard) const { return "S(" + std::to_string(shard.dim) + ")"; }
  std::string operator()(const Partial& partial) const { return "P(" + reduce_op_name(partial.reduce) + ")"; }
  std::string operator()(const MaskPartial& mask) const {
    return mask.num_embeddings == 0 ? "MP" : "MP(" + std::to_string(mask.num_embeddings) + ")";
  }
};

// Sets `inner` to the text between "<prefix>(" and a final ")"; false when `text` has another form.
bool parenthesized(std::string_view text, std::string_view prefix, std::string_view& inner) {
  if (text.size() < prefix.size() + 2 || text.substr(0, prefix.size()) != prefix) return false;
  if (text[prefix.size()] != '(' || text.back() != ')') return false;
  inner = text.substr(prefix.size() + 1, text.size() - prefix.size() - 2);
  return true;
}

bool parse_int(std::string_view text, int64_t& value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

[[noreturn]] void bad_placement(std::string_view text) {
  throw ValueError("parse_placement: '" + std::string(text) +
                   "' is not a placement (expected R, S(<dim>), P(sum|avg|max|min), MP or MP(<num_embeddings>))");
}

}  // namespace

std::string placement_str(const Placement& placement) { return std::visit(PlacementPrinter{}, placement); }

std::string placements_str(std::span<const Placement> placements) {
  std::string out = "[";
  for (size_t i = 0; i < placements.size(); ++i) {
    if (i > 0) out += ", ";
    out += placement_str(placements[i]);
  }
  return out + "]";
}

Placement parse_placement(std::string_view text) {
  if (text == "R") return Replicate{};
  if (text == "P") return Partial{};
  if (text == "MP") return MaskPartial{};
  std::string_view inner;
  int64_t value = 0;
  if (parenthesized(text, "S", inner)) {
    if (!parse_int(inner, value)) bad_placement(text);
    return Shard{value};
  }
  if (parenthesized(text, "MP", inner)) {
    if (!parse_int(inner, value) || value < 0) bad_placement(text);
    return MaskPartial{value};
  }
  if (parenthesized(text, "P", inner)) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
      if (inner == reduce_op_name(op)) return Partial{op};
    }
  }
  bad_placement(text);
}

bool is_partial(const Placement& placement) {
  return std::holds_alternative<Partial>(placement) || std::holds_alternative<MaskPartial>(placement);
}

ReduceOp partial_reduce(const Placement& placement) {
  if (const auto* partial = std::get_if<Partial>(&placement)) return partial->reduce;
  if (std::holds_alternative<MaskPartial>(placement)) return ReduceOp::Sum;
  throw ValueError("partial_reduce: placement " + placement_str(placement) + " is not Partial or MaskPartial");
}

}  // namespace px

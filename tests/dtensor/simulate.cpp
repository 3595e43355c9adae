#include "dtensor/simulate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>

#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/ops/dispatch.h"

namespace px::testing {

namespace {

// A tensor's logical values in row-major order, in float64: the harness's own arithmetic
// (chunks, splits, concatenation, reductions) stays independent of the ops under test.
struct Dense {
  Shape shape;
  std::vector<double> values;
};

Dense dense_of(const Tensor& tensor) { return {tensor.shape(), tensor.to_vector<double>()}; }

int64_t product(const Shape& shape, size_t begin, size_t end) {
  int64_t count = 1;
  for (size_t d = begin; d < end; ++d) count *= shape[d];
  return count;
}

// The values as `dtype` stores them.
std::vector<double> rounded(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return Tensor::from_vector(values, shape, dtype).to_vector<double>();
}

Dense narrow(const Dense& x, size_t dim, int64_t start, int64_t length) {
  int64_t outer = product(x.shape, 0, dim), size = x.shape[dim], inner = product(x.shape, dim + 1, x.shape.size());
  Dense out{x.shape, {}};
  out.shape[dim] = length;
  out.values.reserve(static_cast<size_t>(outer * length * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = start; i < start + length; ++i) {
      auto first = x.values.begin() + (o * size + i) * inner;
      out.values.insert(out.values.end(), first, first + inner);
    }
  }
  return out;
}

Dense concat(const std::vector<Dense>& parts, size_t dim) {
  Dense out{parts.front().shape, {}};
  out.shape[dim] = 0;
  for (const Dense& part : parts) out.shape[dim] += part.shape[dim];
  int64_t outer = product(out.shape, 0, dim), inner = product(out.shape, dim + 1, out.shape.size());
  out.values.reserve(static_cast<size_t>(numel(out.shape)));
  for (int64_t o = 0; o < outer; ++o) {
    for (const Dense& part : parts) {
      int64_t block = part.shape[dim] * inner;
      auto first = part.values.begin() + o * block;
      out.values.insert(out.values.end(), first, first + block);
    }
  }
  return out;
}

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

bool same_dense(const Dense& a, const Dense& b) {
  return a.shape == b.shape && std::equal(a.values.begin(), a.values.end(), b.values.begin(), same_value);
}

// n parts of `x` whose reduction with `op` gives x back (see simulate.h).
std::vector<Dense> split_partial(const Dense& x, DType dtype, ReduceOp op, int64_t n, std::mt19937_64& rng) {
  auto count = static_cast<size_t>(n);
  std::vector<Dense> parts(count, Dense{x.shape, std::vector<double>(x.values.size())});
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> integer(-5, 5), positive(1, 5);
  std::uniform_int_distribution<size_t> holder_of(0, count - 1);
  bool is_int = dtype == DType::Int64;
  // Weights 1/2, 1/4, ..., 1/2^(n-1), 1/2^(n-1): scaling by a power of two is exact in any float format.
  std::vector<double> dyadic(count, 1.0);
  for (size_t k = 0; k + 1 < count; ++k) dyadic[k] = std::ldexp(1.0, -static_cast<int>(k + 1));
  if (count > 1) dyadic[count - 1] = dyadic[count - 2];
  for (size_t e = 0; e < x.values.size(); ++e) {
    double v = x.values[e];
    if (op == ReduceOp::Sum || op == ReduceOp::Avg) {
      double total = op == ReduceOp::Avg ? v * static_cast<double>(n) : v;
      if (dtype == DType::BFloat16) {
        std::shuffle(dyadic.begin(), dyadic.end(), rng);
        for (size_t k = 0; k < count; ++k) parts[k].values[e] = total * dyadic[k];
        continue;
      }
      double rest = total;
      for (size_t k = 0; k + 1 < count; ++k) {
        double r = is_int ? static_cast<double>(integer(rng)) : real(rng) * (1.0 + std::abs(v));
        if (dtype == DType::Float32) r = static_cast<double>(static_cast<float>(r));
        parts[k].values[e] = r;
        rest -= r;
      }
      parts[count - 1].values[e] = rest;
    } else {
      size_t holder = holder_of(rng);
      double sign = op == ReduceOp::Max ? -1.0 : 1.0;
      for (size_t k = 0; k < count; ++k) {
        double gap = is_int ? static_cast<double>(positive(rng)) : std::abs(real(rng));
        parts[k].values[e] = k == holder ? v : v + sign * gap;
      }
    }
  }
  // Store every part as the dtype would, so that a nested split splits the stored value.
  for (Dense& part : parts) part.values = rounded(part.values, part.shape, dtype);
  return parts;
}

std::string where_str(const OpDef& op, const NdStrategy& strategy) {
  return "simulate_strategy: " + op.name + " under " + nd_strategy_str(strategy);
}

// A seed for the split of one input's value at one node of the distribution tree: `path` names the
// node by its coordinates so far, with 0 for replicated mesh dims, so that replicas split alike.
uint64_t split_seed(uint64_t seed, size_t input, const std::vector<int64_t>& path) {
  uint64_t h = seed * 0x9E3779B97F4A7C15ull + input + 1;
  for (int64_t step : path) h = (h ^ static_cast<uint64_t>(step + 1)) * 0x100000001B3ull;
  return h;
}

// The local value of input `input` at every mesh position (row-major), mesh dim by mesh dim.
std::vector<Dense> distribute(const Tensor& global, size_t input, const std::vector<Placement>& placements,
                              const dist::DeviceMesh& mesh, uint64_t seed, const std::string& what) {
  if (static_cast<int64_t>(placements.size()) != mesh.ndim()) {
    throw ValueError(what + ": " + std::to_string(placements.size()) + " placements for a " +
                     std::to_string(mesh.ndim()) + "-d mesh");
  }
  struct Node {
    Dense value;
    std::vector<int64_t> path;
  };
  std::vector<Node> level{{dense_of(global), {}}};
  for (int64_t d = 0; d < mesh.ndim(); ++d) {
    int64_t n = mesh.size(d);
    const Placement& placement = placements[static_cast<size_t>(d)];
    std::vector<Node> next;
    for (const Node& node : level) {
      auto child_path = [&](int64_t c) {
        std::vector<int64_t> path = node.path;
        path.push_back(c);
        return path;
      };
      if (const auto* shard = std::get_if<Shard>(&placement)) {
        const Dense& item = node.value;
        auto dim = static_cast<size_t>(normalize_dim(shard->dim, static_cast<int64_t>(item.shape.size()), what));
        for (int64_t c = 0; c < n; ++c) {
          int64_t size = item.shape[dim];
          next.push_back(
              {narrow(item, dim, dist::shard_offset(size, n, c), dist::shard_size(size, n, c)), child_path(c)});
        }
      } else if (std::holds_alternative<Replicate>(placement)) {
        for (int64_t c = 0; c < n; ++c) next.push_back({node.value, child_path(0)});
      } else if (const auto* partial = std::get_if<Partial>(&placement)) {
        if (global.dtype() == DType::Bool) throw ValueError(what + ": a bool input cannot be partial");
        std::mt19937_64 rng(split_seed(seed, input, node.path));
        std::vector<Dense> parts = split_partial(node.value, global.dtype(), partial->reduce, n, rng);
        for (int64_t c = 0; c < n; ++c) next.push_back({std::move(parts[static_cast<size_t>(c)]), child_path(c)});
      } else {
        throw ValueError(what + ": an input cannot be " + placement_str(placement));
      }
    }
    level = std::move(next);
  }
  std::vector<Dense> locals;
  for (Node& node : level) locals.push_back(std::move(node.value));
  return locals;
}

// A local output (and its mask, 1 where masked, broadcast to the output's shape) being put back together.
struct Piece {
  Dense value;
  std::optional<Dense> mask;
};

Dense broadcast_mask(const Tensor& mask, const Shape& shape, const std::string& what) {
  const Shape& from = mask.shape();
  if (from.size() > shape.size()) {
    throw ValueError(what + ": mask " + mask.meta_info().str() + " does not broadcast to " + shape_str(shape));
  }
  size_t lead = shape.size() - from.size();
  Shape strides(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = from.size(); d-- > 0;) {
    if (from[d] != 1 && from[d] != shape[lead + d]) {
      throw ValueError(what + ": mask " + mask.meta_info().str() + " does not broadcast to " + shape_str(shape));
    }
    strides[lead + d] = from[d] == 1 ? 0 : stride;
    stride *= from[d];
  }
  std::vector<double> source = mask.to_vector<double>();
  Dense out{shape, std::vector<double>(static_cast<size_t>(numel(shape)))};
  Shape index(shape.size(), 0);
  for (double& value : out.values) {
    int64_t at = 0;
    for (size_t d = 0; d < shape.size(); ++d) at += index[d] * strides[d];
    value = source[static_cast<size_t>(at)] != 0.0 ? 1.0 : 0.0;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

double reduce_values(ReduceOp op, const std::vector<Piece>& group, size_t e) {
  double acc = group.front().value.values[e];
  for (size_t k = 1; k < group.size(); ++k) {
    double v = group[k].value.values[e];
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        acc += v;
        break;
      case ReduceOp::Max:
        acc = (std::isnan(acc) || std::isnan(v)) ? std::nan("") : std::max(acc, v);
        break;
      case ReduceOp::Min:
        acc = (std::isnan(acc) || std::isnan(v)) ? std::nan("") : std::min(acc, v);
        break;
    }
  }
  return op == ReduceOp::Avg ? acc / static_cast<double>(group.size()) : acc;
}

// The pieces of one group of coordinates (differing only in the mesh dim being undone), as one.
Piece combine(const std::vector<Piece>& group, const Placement& placement, const std::string& what) {
  bool any_mask = false, all_masks = true;
  for (const Piece& piece : group) {
    any_mask |= piece.mask.has_value();
    all_masks &= piece.mask.has_value();
  }
  if (any_mask && !all_masks) throw ValueError(what + ": some coordinates give a mask and others none");
  auto masks_agree = [&] {
    for (const Piece& piece : group) {
      if (any_mask && !same_dense(*piece.mask, *group.front().mask)) {
        throw ValueError(what + ": coordinates that should agree give different masks");
      }
    }
  };
  if (const auto* shard = std::get_if<Shard>(&placement)) {
    auto dim =
        static_cast<size_t>(normalize_dim(shard->dim, static_cast<int64_t>(group.front().value.shape.size()), what));
    std::vector<Dense> values, masks;
    for (const Piece& piece : group) {
      Shape expected = group.front().value.shape, got = piece.value.shape;
      if (got.size() == expected.size()) got[dim] = expected[dim];
      if (got != expected) {
        throw ValueError(what + ": shards of shapes " + shape_str(group.front().value.shape) + " and " +
                         shape_str(piece.value.shape) + " do not concatenate along dim " + std::to_string(dim));
      }
      values.push_back(piece.value);
      if (any_mask) masks.push_back(*piece.mask);
    }
    Piece out{concat(values, dim), std::nullopt};
    if (any_mask) out.mask = concat(masks, dim);
    return out;
  }
  for (const Piece& piece : group) {
    if (piece.value.shape != group.front().value.shape) {
      throw ValueError(what + ": local outputs of shapes " + shape_str(group.front().value.shape) + " and " +
                       shape_str(piece.value.shape) + " under " + placement_str(placement));
    }
  }
  if (std::holds_alternative<Replicate>(placement)) {
    for (const Piece& piece : group) {
      if (!same_dense(piece.value, group.front().value)) {
        throw ValueError(what + ": a replicated output differs between mesh coordinates");
      }
    }
    masks_agree();
    return group.front();
  }
  Piece out{group.front().value, std::nullopt};
  if (const auto* partial = std::get_if<Partial>(&placement)) {
    masks_agree();
    for (size_t e = 0; e < out.value.values.size(); ++e) out.value.values[e] = reduce_values(partial->reduce, group, e);
    out.mask = group.front().mask;
    return out;
  }
  // MaskPartial: each coordinate contributes its unmasked values only.
  if (!any_mask) throw ValueError(what + ": a MaskPartial output came without a mask");
  for (size_t e = 0; e < out.value.values.size(); ++e) {
    double acc = 0.0;
    for (const Piece& piece : group) acc += piece.mask->values[e] != 0.0 ? 0.0 : piece.value.values[e];
    out.value.values[e] = acc;
  }
  return out;
}

}  // namespace

std::vector<Tensor> simulate_strategy(const OpDef& op, const std::vector<Tensor>& global_inputs, const Attrs& attrs,
                                      const NdStrategy& strategy, const dist::DeviceMesh& mesh, uint64_t seed) {
  const std::string what = where_str(op, strategy);
  std::vector<Tensor> metas;
  std::vector<TensorMeta> global_metas;
  for (const Tensor& input : global_inputs) {
    metas.push_back(Tensor::meta(input.shape(), input.dtype()));
    global_metas.push_back(input.meta_info());
  }
  const Attrs filled = check_call(op, metas, attrs);
  if (strategy.inputs.size() != global_inputs.size()) {
    throw ValueError(what + ": the strategy places " + std::to_string(strategy.inputs.size()) +
                     " inputs; the call has " + std::to_string(global_inputs.size()));
  }

  std::vector<std::vector<Dense>> local_values;  // per input, per mesh position
  for (size_t i = 0; i < global_inputs.size(); ++i) {
    local_values.push_back(
        distribute(global_inputs[i], i, strategy.inputs[i], mesh, seed, what + ", input " + std::to_string(i)));
  }

  std::vector<std::vector<Piece>> pieces;  // per output, per mesh position
  std::vector<TensorMeta> global_outputs;
  for (int64_t position = 0; position < mesh.size(); ++position) {
    std::vector<int64_t> coordinate(static_cast<size_t>(mesh.ndim()));
    for (int64_t d = mesh.ndim(), rest = position; d-- > 0;) {
      coordinate[static_cast<size_t>(d)] = rest % mesh.size(d);
      rest /= mesh.size(d);
    }
    LocalCallPlan plan = plan_local_call(op, global_metas, filled, strategy, mesh, coordinate);
    std::vector<Tensor> local_inputs;
    for (size_t i = 0; i < global_inputs.size(); ++i) {
      const Dense& local = local_values[i][static_cast<size_t>(position)];
      if (local.shape != plan.local_inputs[i].shape) {
        throw ValueError(what + ": the harness built input " + std::to_string(i) + " as " + shape_str(local.shape) +
                         " but the plan expects " + plan.local_inputs[i].str() + " at " + shape_str(coordinate));
      }
      local_inputs.push_back(Tensor::from_vector(local.values, local.shape, global_inputs[i].dtype()));
    }
    LocalResult result = run_local(op, local_inputs, plan);
    if (pieces.empty()) {
      pieces.resize(result.outputs.size());
      global_outputs = plan.global_outputs;
    }
    for (size_t o = 0; o < result.outputs.size(); ++o) {
      Piece piece{dense_of(result.outputs[o]), std::nullopt};
      if (o < result.masks.size() && result.masks[o].defined()) {
        piece.mask = broadcast_mask(result.masks[o], piece.value.shape, what);
      }
      pieces[o].push_back(std::move(piece));
    }
  }

  std::vector<Tensor> outputs;
  for (size_t o = 0; o < pieces.size(); ++o) {
    const std::string output_what = what + ", output " + std::to_string(o);
    std::vector<Piece> level = std::move(pieces[o]);
    for (int64_t d = mesh.ndim(); d-- > 0;) {
      auto n = static_cast<size_t>(mesh.size(d));
      std::vector<Piece> next;
      for (size_t first = 0; first < level.size(); first += n) {
        std::vector<Piece> group(level.begin() + static_cast<std::ptrdiff_t>(first),
                                 level.begin() + static_cast<std::ptrdiff_t>(first + n));
        next.push_back(combine(group, strategy.outputs[o][static_cast<size_t>(d)],
                               output_what + " (mesh dim " + std::to_string(d) + ")"));
      }
      level = std::move(next);
    }
    const Dense& value = level.front().value;
    if (value.shape != global_outputs[o].shape) {
      throw ValueError(output_what + ": assembled " + shape_str(value.shape) + ", expected " + global_outputs[o].str());
    }
    outputs.push_back(Tensor::from_vector(value.values, value.shape, global_outputs[o].dtype));
  }
  return outputs;
}

}  // namespace px::testing

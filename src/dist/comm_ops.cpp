// Collective ops (see dist/comm_ops.h) and the per-thread binding of groups.

#include "parallax/dist/comm_ops.h"

#include <algorithm>
#include <string>

#include "parallax/core/error.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dist/process_group.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/registry.h"

namespace px::dist {

namespace {

// The MeshGroups alive on this thread, oldest first. Each binds itself for its own lifetime,
// so this holds no state beyond what those objects own.
std::vector<const MeshGroups*>& thread_bindings() {
  thread_local std::vector<const MeshGroups*> bindings;
  return bindings;
}

std::string ranks_str(std::span<const int> ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? "," : "") + std::to_string(ranks[i]);
  return text + "]";
}

std::vector<int> ranks_attr(const Attrs& attrs) {
  const std::vector<int64_t>& values = attrs.get_ints("ranks");
  return std::vector<int>(values.begin(), values.end());
}

int64_t group_size(const std::string& op, const Attrs& attrs) {
  const std::vector<int64_t>& ranks = attrs.get_ints("ranks");
  if (ranks.empty()) throw ValueError(op + ": the group's rank list is empty");
  return static_cast<int64_t>(ranks.size());
}

ReduceOp reduce_op_attr(const std::string& op, const Attrs& attrs) {
  const std::string& name = attrs.get_string("op");
  for (ReduceOp candidate : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
    if (reduce_op_name(candidate) == name) return candidate;
  }
  throw ValueError(op + ": unknown reduction '" + name + "' (expected sum, avg, max or min)");
}

std::vector<int64_t> ints(const std::vector<int>& ranks) { return std::vector<int64_t>(ranks.begin(), ranks.end()); }

// x's shape with dim `dim` cut into [parts, size / parts]; ValueError unless it divides.
Shape split_dim_shape(const std::string& op, const Shape& shape, int64_t dim, int64_t parts) {
  if (shape[static_cast<size_t>(dim)] % parts != 0) {
    throw ValueError(op + ": dim " + std::to_string(dim) + " of shape " + shape_str(shape) + " does not divide into " +
                     std::to_string(parts) + " equal chunks");
  }
  Shape out = shape;
  out[static_cast<size_t>(dim)] /= parts;
  out.insert(out.begin() + dim, parts);
  return out;
}

// A dense contiguous buffer with x's values (an empty view may keep strides a collective refuses).
Tensor dense(const Tensor& x) { return x.numel() == 0 ? Tensor::empty(x.shape(), x.dtype()) : x.contiguous(); }

// The permutation that moves axis `from` to position `to`.
std::vector<int64_t> move_axis(int64_t ndim, int64_t from, int64_t to) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < ndim; ++i) {
    if (i != from) order.push_back(i);
  }
  order.insert(order.begin() + to, from);
  return order;
}

// `parts` stacked on a leading axis, [parts, ...chunk], made into chunk concatenated along `dim`.
Tensor concat_leading(const Tensor& stacked, int64_t dim) {
  Shape chunk(stacked.shape().begin() + 1, stacked.shape().end());
  Shape out = chunk;
  out[static_cast<size_t>(dim)] *= stacked.shape()[0];
  return dense(stacked.permute(move_axis(stacked.dim(), 0, dim))).reshape(out);
}

// x cut into `parts` along `dim`, chunks stacked on a new leading axis, contiguous.
Tensor split_leading(const std::string& op, const Tensor& x, int64_t dim, int64_t parts) {
  Tensor split = dense(x).reshape(split_dim_shape(op, x.shape(), dim, parts));
  return dense(split.permute(move_axis(split.dim(), dim, 0)));
}

OpCost moved_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&) {
  return {0.0, static_cast<double>(in[0].numel() * dtype_size(in[0].dtype)),
          static_cast<double>(out[0].numel() * dtype_size(out[0].dtype))};
}

// A reducing collective also adds (or compares) once per element.
OpCost reducing_cost(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs& attrs) {
  OpCost cost = moved_cost(in, out, attrs);
  cost.flops = static_cast<double>(in[0].numel());
  return cost;
}

OpDef all_reduce_def() {
  OpDef def;
  def.name = "all_reduce";
  def.inputs = {{"x"}};
  def.attrs = {{"op", AttrType::String, std::nullopt}, {"ranks", AttrType::Ints, std::nullopt}};
  def.infer = [](const std::vector<TensorMeta>& in, const Attrs& attrs) {
    group_size("all_reduce", attrs);
    reduce_op_attr("all_reduce", attrs);
    return std::vector<TensorMeta>{in[0]};
  };
  def.kernel = [](const std::vector<Tensor>& in, const Attrs& attrs) {
    ProcessGroup& group = bound_group(ranks_attr(attrs));
    Tensor out = dense(in[0].clone());
    group.all_reduce(out, reduce_op_attr("all_reduce", attrs));
    return std::vector<Tensor>{out};
  };
  def.cost = reducing_cost;
  return def;
}

OpDef all_gather_def() {
  OpDef def;
  def.name = "all_gather";
  def.inputs = {{"x"}};
  def.attrs = {{"dim", AttrType::Int, std::nullopt}, {"ranks", AttrType::Ints, std::nullopt}};
  def.infer = [](const std::vector<TensorMeta>& in, const Attrs& attrs) {
    int64_t n = group_size("all_gather", attrs);
    int64_t dim = normalize_dim(attrs.get_int("dim"), in[0].ndim(), "all_gather");
    TensorMeta out = in[0];
    out.shape[static_cast<size_t>(dim)] *= n;
    return std::vector<TensorMeta>{out};
  };
  def.kernel = [](const std::vector<Tensor>& in, const Attrs& attrs) {
    ProcessGroup& group = bound_group(ranks_attr(attrs));
    int64_t dim = normalize_dim(attrs.get_int("dim"), in[0].dim(), "all_gather");
    Shape stacked_shape = in[0].shape();
    stacked_shape.insert(stacked_shape.begin(), group.size());
    Tensor stacked = Tensor::empty(stacked_shape, in[0].dtype());
    group.all_gather(dense(in[0]), stacked);
    return std::vector<Tensor>{concat_leading(stacked, dim)};
  };
  def.cost = moved_cost;
  return def;
}

OpDef reduce_scatter_def() {
  OpDef def;
  def.name = "reduce_scatter";
  def.inputs = {{"x"}};
  def.attrs = {{"op", AttrType::String, std::nullopt},
               {"dim", AttrType::Int, std::nullopt},
               {"ranks", AttrType::Ints, std::nullopt}};
  def.infer = [](const std::vector<TensorMeta>& in, const Attrs& attrs) {
    int64_t n = group_size("reduce_scatter", attrs);
    reduce_op_attr("reduce_scatter", attrs);
    int64_t dim = normalize_dim(attrs.get_int("dim"), in[0].ndim(), "reduce_scatter");
    split_dim_shape("reduce_scatter", in[0].shape, dim, n);
    TensorMeta out = in[0];
    out.shape[static_cast<size_t>(dim)] /= n;
    return std::vector<TensorMeta>{out};
  };
  def.kernel = [](const std::vector<Tensor>& in, const Attrs& attrs) {
    ProcessGroup& group = bound_group(ranks_attr(attrs));
    int64_t dim = normalize_dim(attrs.get_int("dim"), in[0].dim(), "reduce_scatter");
    Tensor chunks = split_leading("reduce_scatter", in[0], dim, group.size());
    Shape out_shape = in[0].shape();
    out_shape[static_cast<size_t>(dim)] /= group.size();
    Tensor out = Tensor::empty(out_shape, in[0].dtype());
    group.reduce_scatter(chunks, out, reduce_op_attr("reduce_scatter", attrs));
    return std::vector<Tensor>{out};
  };
  def.cost = reducing_cost;
  return def;
}

OpDef all_to_all_def() {
  OpDef def;
  def.name = "all_to_all";
  def.inputs = {{"x"}};
  def.attrs = {{"split_dim", AttrType::Int, std::nullopt},
               {"concat_dim", AttrType::Int, std::nullopt},
               {"ranks", AttrType::Ints, std::nullopt}};
  def.infer = [](const std::vector<TensorMeta>& in, const Attrs& attrs) {
    int64_t n = group_size("all_to_all", attrs);
    int64_t split = normalize_dim(attrs.get_int("split_dim"), in[0].ndim(), "all_to_all split_dim");
    int64_t concat = normalize_dim(attrs.get_int("concat_dim"), in[0].ndim(), "all_to_all concat_dim");
    split_dim_shape("all_to_all", in[0].shape, split, n);
    TensorMeta out = in[0];
    out.shape[static_cast<size_t>(split)] /= n;
    out.shape[static_cast<size_t>(concat)] *= n;
    return std::vector<TensorMeta>{out};
  };
  def.kernel = [](const std::vector<Tensor>& in, const Attrs& attrs) {
    ProcessGroup& group = bound_group(ranks_attr(attrs));
    int64_t split = normalize_dim(attrs.get_int("split_dim"), in[0].dim(), "all_to_all split_dim");
    int64_t concat = normalize_dim(attrs.get_int("concat_dim"), in[0].dim(), "all_to_all concat_dim");
    Tensor chunks = split_leading("all_to_all", in[0], split, group.size());
    Tensor received = Tensor::empty(chunks.shape(), chunks.dtype());
    group.all_to_all(chunks, received);
    return std::vector<Tensor>{concat_leading(received, concat)};
  };
  def.cost = moved_cost;
  return def;
}

}  // namespace

namespace detail {

void bind_mesh_groups(const MeshGroups* groups) { thread_bindings().push_back(groups); }

void unbind_mesh_groups(const MeshGroups* groups) {
  auto& bindings = thread_bindings();
  auto it = std::find(bindings.rbegin(), bindings.rend(), groups);
  if (it != bindings.rend()) bindings.erase(std::next(it).base());
}

}  // namespace detail

ProcessGroup& bound_group(std::span<const int> ranks) {
  const auto& bindings = thread_bindings();
  for (auto it = bindings.rbegin(); it != bindings.rend(); ++it) {
    const MeshGroups& groups = **it;
    for (int64_t dim = 0; dim < groups.mesh().ndim(); ++dim) {
      const std::vector<int>& members = groups.group_ranks(dim);
      if (std::equal(members.begin(), members.end(), ranks.begin(), ranks.end())) return groups.group(dim);
    }
    const std::vector<int>& world = groups.world_ranks();
    if (std::equal(world.begin(), world.end(), ranks.begin(), ranks.end())) return groups.world();
  }
  throw CommError("no process group of ranks " + ranks_str(ranks) +
                  " is bound to this thread: collective ops find their group through a MeshGroups built on the "
                  "same thread, which must still be alive");
}

Tensor all_reduce(const Tensor& x, ReduceOp op, const std::vector<int>& ranks) {
  return call1(op::all_reduce(), {x}, {{"op", reduce_op_name(op)}, {"ranks", ints(ranks)}});
}

Tensor all_gather(const Tensor& x, int64_t dim, const std::vector<int>& ranks) {
  return call1(op::all_gather(), {x}, {{"dim", dim}, {"ranks", ints(ranks)}});
}

Tensor reduce_scatter(const Tensor& x, ReduceOp op, int64_t dim, const std::vector<int>& ranks) {
  return call1(op::reduce_scatter(), {x}, {{"op", reduce_op_name(op)}, {"dim", dim}, {"ranks", ints(ranks)}});
}

Tensor all_to_all(const Tensor& x, int64_t split_dim, int64_t concat_dim, const std::vector<int>& ranks) {
  return call1(op::all_to_all(), {x}, {{"split_dim", split_dim}, {"concat_dim", concat_dim}, {"ranks", ints(ranks)}});
}

void register_collective_ops(Registry& registry) {
  for (OpDef def : {all_reduce_def(), all_gather_def(), reduce_scatter_def(), all_to_all_def()}) {
    def.traits.collective = true;
    registry.add(std::move(def));
  }
}

}  // namespace px::dist

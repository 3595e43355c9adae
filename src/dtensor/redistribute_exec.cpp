#include "dtensor/redistribute_exec.h"

#include "parallax/core/error.h"
#include "parallax/dist/comm_ops.h"
#include "parallax/dist/sharding.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/op_handles.h"

namespace px::detail {

namespace {

// `x` grown along `dim` to `size` with zeros at the end (collectives move equal-sized buffers).
Tensor pad_to(const Tensor& x, int64_t dim, int64_t size) {
  int64_t have = x.shape()[static_cast<size_t>(dim)];
  if (have == size) return x;
  Shape zeros_shape = x.shape();
  zeros_shape[static_cast<size_t>(dim)] = size - have;
  return call1(op::cat(), {x, zeros_op(zeros_shape, x.dtype())}, {{"dim", dim}});
}

// Narrowing a dim other than the first leaves a strided view; local shards are kept dense (as
// PyTorch's are), so that an op with view semantics (view) works on them as on a dense global.
Tensor dense(const Tensor& x) { return x.is_contiguous() ? x : x.contiguous(); }

// The size of tensor dim `dim` of this coordinate's block under `placements`.
int64_t block_size(const RedistributePlan& plan, const std::vector<Placement>& placements, int64_t dim,
                   std::span<const int64_t> coordinate) {
  return dist::local_shard(plan.from.meta.shape, placements, plan.from.mesh, coordinate)
      .shape[static_cast<size_t>(dim)];
}

}  // namespace

Tensor zeros_op(const Shape& shape, DType dtype) {
  return call1(op::full(), {}, {{"shape", shape}, {"value", 0.0}, {"dtype", dtype}});
}

Tensor run_redistribute(const Tensor& local, const Tensor& mask, const RedistributePlan& plan, int rank) {
  const dist::DeviceMesh& mesh = plan.from.mesh;
  const std::vector<int64_t> coordinate = mesh.coordinate(rank);
  Tensor x = local;
  for (const RedistributeStep& step : plan.steps) {
    const std::vector<int> ranks = mesh.group_ranks(step.mesh_dim, rank);
    int64_t n = plan.from.mesh.size(step.mesh_dim);
    int64_t here = coordinate[static_cast<size_t>(step.mesh_dim)];
    switch (step.kind) {
      case RedistributeKind::ApplyMask: {
        if (!mask.defined()) {
          throw ValueError("redistribute: " + plan.from.str() +
                           " is MaskPartial but its mask was already released by an earlier reduction; a "
                           "MaskPartial value can be reduced once");
        }
        x = call1(op::where(), {mask, zeros_op({}, x.dtype()), x});
        break;
      }
      case RedistributeKind::AllGather: {
        // Every chunk but the last non-empty one is full, so the real values are the first `size`.
        int64_t size = block_size(plan, step.after, step.tensor_dim, coordinate);
        int64_t chunk = dist::chunk_size(size, n);
        x = dist::all_gather(pad_to(x, step.tensor_dim, chunk), step.tensor_dim, ranks);
        if (chunk * n != size) x = dense(x.narrow(step.tensor_dim, 0, size));
        break;
      }
      case RedistributeKind::AllReduce:
        x = dist::all_reduce(x, step.reduce, ranks);
        break;
      case RedistributeKind::ReduceScatter: {
        int64_t size = x.shape()[static_cast<size_t>(step.tensor_dim)];
        int64_t chunk = dist::chunk_size(size, n);
        x = dist::reduce_scatter(pad_to(x, step.tensor_dim, chunk * n), step.reduce, step.tensor_dim, ranks);
        int64_t mine = dist::shard_size(size, n, here);
        if (mine != chunk) x = dense(x.narrow(step.tensor_dim, 0, mine));
        break;
      }
      case RedistributeKind::AllToAll:
        x = dist::all_to_all(x, step.to_tensor_dim, step.tensor_dim, ranks);
        break;
      case RedistributeKind::LocalSlice: {
        int64_t size = x.shape()[static_cast<size_t>(step.tensor_dim)];
        x = dense(x.narrow(step.tensor_dim, dist::shard_offset(size, n, here), dist::shard_size(size, n, here)));
        break;
      }
      case RedistributeKind::LocalPartition:
        if (step.reduce == ReduceOp::Sum && here != 0) x = zeros_op(x.shape(), x.dtype());
        break;
    }
  }
  return x;
}

}  // namespace px::detail

#pragma once
// Private: running a redistribution plan on this rank's local shard, with ops
// (collective ops included), so that it traces like any other computation.

#include "parallax/core/tensor.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/dtensor/redistribute.h"

namespace px::detail {

// The local shard of world rank `rank` placed as plan.to, from `local` placed as plan.from.
// `mask` is the source's mask (needed when plan.from holds a MaskPartial; ValueError when it is
// undefined then). Needs no process group: the collectives are ops naming their groups' ranks,
// so this also traces another rank's program (lowering).
Tensor run_redistribute(const Tensor& local, const Tensor& mask, const RedistributePlan& plan, int rank);
inline Tensor run_redistribute(const Tensor& local, const Tensor& mask, const RedistributePlan& plan,
                               const dist::MeshGroups& groups) {
  return run_redistribute(local, mask, plan, groups.rank());
}

// A zero tensor of this shape and dtype, made by an op (so a trace records it).
Tensor zeros_op(const Shape& shape, DType dtype);

}  // namespace px::detail

// Helpers shared by the reduction ops: dims, output shapes, the kernel runner, cost.

#include "ops/defs/reduce.h"

#include <algorithm>
#include <string>

#include "parallax/ops/op_handles.h"

namespace px::defs {

std::vector<int64_t> reduce_dims(std::string_view op, const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t dim : dims) out.push_back(normalize_dim(dim, ndim, op));
  if (ndim == 0) return {};  // a scalar accepts dim 0 / -1 and reduces nothing
  std::sort(out.begin(), out.end());
  auto repeated = std::adjacent_find(out.begin(), out.end());
  if (repeated != out.end()) {
    throw ValueError(std::string(op) + ": dim " + std::to_string(*repeated) + " appears more than once in dims " +
                     shape_str(dims) + " (rank " + std::to_string(ndim) + ")");
  }
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
  }
  return out;
}

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    if (!reduced) {
      out.push_back(shape[d]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return out;
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= shape[d];
  return count;
}

void require_numeric(std::string_view op, const TensorMeta& meta) {
  if (meta.dtype == DType::Bool) {
    throw DTypeError(std::string(op) + ": bool tensors are not supported, got " + meta.str() +
                     " (convert with .to(i64) or .to(f32) first)");
  }
}

void require_nonempty_reduction(std::string_view op, const TensorMeta& meta, const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (meta.shape[d] == 0) {
      throw ValueError(std::string(op) + ": cannot reduce " + meta.str() + " over dim " + std::to_string(d) +
                       " of size 0 (the result has no identity element)");
    }
  }
}

std::vector<AttrSpec> reduction_attrs() {
  return {{"dims", AttrType::Ints, std::vector<int64_t>{}}, {"keepdim", AttrType::Bool, false}};
}

TensorMeta infer_reduction(std::string_view op, const TensorMeta& input, const Attrs& attrs) {
  std::vector<int64_t> dims = reduce_dims(op, attrs.get_ints("dims"), input.ndim());
  return {reduced_shape(input.shape, dims, attrs.get_bool("keepdim")), input.dtype};
}

Tensor run_reduction(kernels::ReduceOp op, const Tensor& x, const Attrs& attrs, double scale) {
  std::vector<int64_t> dims = reduce_dims("reduction", attrs.get_ints("dims"), x.dim());
  Tensor out = Tensor::empty(reduced_shape(x.shape(), dims, attrs.get_bool("keepdim")), x.dtype());
  kernels::ReducePlan plan = kernels::make_reduce_plan(x.shape(), x.strides(), dims);
  visit_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      PX_ASSERT(false && "bool reductions are rejected by inference");
    } else {
      kernels::reduce<T>(op, x.data<T>(), plan, out.data<T>(), scale);
    }
  });
  return out;
}

OpCost reduction_cost(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs, const Attrs&) {
  OpCost cost;
  cost.flops = static_cast<double>(inputs[0].numel());
  cost.bytes_read = static_cast<double>(inputs[0].nbytes());
  cost.bytes_written = static_cast<double>(outputs[0].nbytes());
  return cost;
}

Tensor grad_with_kept_dims(const Tensor& grad, const Shape& input_shape, const Attrs& attrs) {
  std::vector<int64_t> dims =
      reduce_dims("reduction", attrs.get_ints("dims"), static_cast<int64_t>(input_shape.size()));
  Shape kept = reduced_shape(input_shape, dims, /*keepdim=*/true);
  if (grad.shape() == kept) return grad;
  return call1(op::reshape(), {grad}, {{"shape", kept}});
}

}  // namespace px::defs

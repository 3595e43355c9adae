// matmul with torch.matmul semantics: a 1-D lhs is a row and a 1-D rhs a column
// (their unit dim is dropped from the result); dims before the last two are batch
// dims that broadcast. One GEMM per batch element on the operands' own strides,
// or a single GEMM when the batch folds into the rows (x[B,T,D] · W[D,E]).

#include "ops/defs/matmul.h"

#include "ops/defs/sharding_shape_rules.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/op_handles.h"
#include "parallax/ops/shape.h"

namespace px {

namespace defs {

kernels::MatrixLayout lhs_matrix(const Tensor& a) {
  int64_t nd = a.dim();
  if (nd == 1) return {1, a.shape()[0], 0, a.strides()[0]};
  return {a.shape()[nd - 2], a.shape()[nd - 1], a.strides()[nd - 2], a.strides()[nd - 1]};
}

kernels::MatrixLayout rhs_matrix(const Tensor& b) {
  int64_t nd = b.dim();
  if (nd == 1) return {b.shape()[0], 1, b.strides()[0], 0};
  return {b.shape()[nd - 2], b.shape()[nd - 1], b.strides()[nd - 2], b.strides()[nd - 1]};
}

Strides batch_strides(const Tensor& t, const Shape& batch) {
  int64_t own = std::max<int64_t>(t.dim() - 2, 0);
  int64_t lead = static_cast<int64_t>(batch.size()) - own;
  Strides out(batch.size(), 0);
  for (int64_t i = 0; i < own; ++i) {
    if (t.shape()[i] != 1) out[lead + i] = t.strides()[i];
  }
  return out;
}

void run_batched_matmul(const Tensor& a, const Tensor& b, const Tensor& out, const kernels::BatchedMatmul& args,
                        double beta) {
  switch (a.dtype()) {
    case DType::Float32:
      return kernels::batched_matmul(a.data<float>(), b.data<float>(), out.data<float>(), args,
                                     static_cast<float>(beta));
    case DType::Float64:
      return kernels::batched_matmul(a.data<double>(), b.data<double>(), out.data<double>(), args, beta);
    case DType::BFloat16:
      return kernels::batched_matmul(a.data<BFloat16>(), b.data<BFloat16>(), out.data<BFloat16>(), args,
                                     static_cast<float>(beta));
    case DType::Int64:
    case DType::Bool:
      PX_ASSERT(false && "GEMM dtypes are checked by inference");
  }
}

void require_gemm_dtype(std::string_view op, const std::vector<TensorMeta>& metas) {
  require_same_dtype(op, metas);
  DType dtype = metas.front().dtype;
  if (dtype != DType::Int64 && dtype != DType::Bool) return;
  std::string listed;
  for (size_t i = 0; i < metas.size(); ++i) listed += (i ? ", " : "") + metas[i].str();
  throw DTypeError(std::string(op) + ": " + std::string(dtype_name(dtype)) +
                   " operands are not supported (GEMM runs in f32, f64 or bf16), got " + listed +
                   " (convert with .to(f32) first)");
}

namespace {

std::string operands(const TensorMeta& a, const TensorMeta& b) { return "lhs " + a.str() + " and rhs " + b.str(); }

Shape batch_of(const TensorMeta& m) { return m.ndim() > 2 ? Shape(m.shape.begin(), m.shape.end() - 2) : Shape{}; }

Shape broadcast_batch(const TensorMeta& a, const TensorMeta& b) {
  Shape batch_a = batch_of(a), batch_b = batch_of(b);
  size_t rank = std::max(batch_a.size(), batch_b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + batch_a.size() < rank ? 1 : batch_a[i + batch_a.size() - rank];
    int64_t db = i + batch_b.size() < rank ? 1 : batch_b[i + batch_b.size() - rank];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError("matmul: the batch dims of " + operands(a, b) + " cannot be broadcast (" + shape_str(batch_a) +
                       " vs " + shape_str(batch_b) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape matmul_shape(const TensorMeta& a, const TensorMeta& b) {
  Shape out = broadcast_batch(a, b);
  if (a.ndim() > 1) out.push_back(a.shape[a.shape.size() - 2]);
  if (b.ndim() > 1) out.push_back(b.shape.back());
  return out;
}

std::vector<TensorMeta> infer_matmul(const std::vector<TensorMeta>& in, const Attrs&) {
  const TensorMeta& a = in[0];
  const TensorMeta& b = in[1];
  if (a.ndim() == 0 || b.ndim() == 0) {
    throw ShapeError("matmul: both operands need at least 1 dim, got " + operands(a, b));
  }
  require_gemm_dtype("matmul", in);
  int64_t a_dim = a.ndim() - 1;
  int64_t b_dim = b.ndim() == 1 ? 0 : b.ndim() - 2;
  if (a.shape[a_dim] != b.shape[b_dim]) {
    throw ShapeError("matmul: " + operands(a, b) + " cannot be contracted (lhs dim " + std::to_string(a_dim) + " = " +
                     std::to_string(a.shape[a_dim]) + ", rhs dim " + std::to_string(b_dim) + " = " +
                     std::to_string(b.shape[b_dim]) + ")");
  }
  return {{matmul_shape(a, b), a.dtype}};
}

std::vector<Tensor> matmul_kernel(const std::vector<Tensor>& in, const Attrs&) {
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  Tensor out = Tensor::empty(matmul_shape(a.meta_info(), b.meta_info()), a.dtype());
  Shape batch = broadcast_batch(a.meta_info(), b.meta_info());
  kernels::BatchedMatmul args{batch, batch_strides(a, batch), batch_strides(b, batch), lhs_matrix(a), rhs_matrix(b)};
  run_batched_matmul(a, b, out, args, 0.0);
  return {out};
}

Tensor transpose_matrix(const Tensor& x) {
  return call1(op::transpose(), {x}, {{"dim0", int64_t{-2}}, {"dim1", int64_t{-1}}});
}

Tensor reshape_to(const Tensor& x, const Shape& shape) {
  return x.shape() == shape ? x : call1(op::reshape(), {x}, {{"shape", shape}});
}

// Lifts 1-D operands to matrices (and the gradient with them), then
// grad_a = g·bᵀ and grad_b = aᵀ·g, summed over the batch dims each operand broadcast.
std::vector<Tensor> vjp_matmul(const VjpContext& ctx) {
  Tensor grad = ctx.grad_outputs[0];
  if (!grad.defined()) return {Tensor(), Tensor()};
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor a2 = a.dim() == 1 ? unsqueeze(a, 0) : a;
  Tensor b2 = b.dim() == 1 ? unsqueeze(b, 1) : b;
  if (b.dim() == 1) grad = unsqueeze(grad, grad.dim());
  if (a.dim() == 1) grad = unsqueeze(grad, grad.dim() - 1);
  Tensor grad_a = sum_to_shape(call1(op::matmul(), {grad, transpose_matrix(b2)}), a2.shape());
  Tensor grad_b = sum_to_shape(call1(op::matmul(), {transpose_matrix(a2), grad}), b2.shape());
  return {reshape_to(grad_a, a.shape()), reshape_to(grad_b, b.shape())};
}

// 2·M·N·K per batch element = 2·K per output element.
OpCost cost_matmul(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out, const Attrs&) {
  OpCost cost;
  cost.flops = 2.0 * static_cast<double>(out[0].numel()) * static_cast<double>(in[0].shape.back());
  cost.bytes_read = static_cast<double>(in[0].nbytes() + in[1].nbytes());
  cost.bytes_written = static_cast<double>(out[0].nbytes());
  return cost;
}

// One mesh dim of matmul, with 1-D operands as the op treats them (a row lhs, a column rhs):
// a batch dim splits both operands alike (an operand broadcasting it, or lacking it, stays
// whole); a's rows split the output rows; b's columns split the output columns; a split
// contraction leaves partial sums; and the product is linear in each operand.
std::vector<ShardingStrategy> matmul_rule(const std::vector<TensorMeta>& in, const Attrs&) {
  const TensorMeta& a = in[0];
  const TensorMeta& b = in[1];
  Shape out = matmul_shape(a, b);
  auto batch_rank = static_cast<int64_t>(broadcast_batch(a, b).size());
  auto out_rank = static_cast<int64_t>(out.size());
  StrategyList list(2, 1);
  for (int64_t i = 0; i < batch_rank; ++i) {
    Placement pa = batch_operand_placement(a, std::max<int64_t>(a.ndim() - 2, 0), batch_rank, i, out[i]);
    Placement pb = batch_operand_placement(b, std::max<int64_t>(b.ndim() - 2, 0), batch_rank, i, out[i]);
    if (pa != rep() || pb != rep()) list.add({pa, pb}, {shard(i)});
  }
  if (a.ndim() >= 2) list.add({shard(a.ndim() - 2), rep()}, {shard(batch_rank)});
  if (b.ndim() >= 2) list.add({rep(), shard(b.ndim() - 1)}, {shard(out_rank - 1)});
  list.add({shard(a.ndim() - 1), shard(b.ndim() == 1 ? 0 : b.ndim() - 2)}, {partial(ReduceOp::Sum)});
  for (ReduceOp op : kLinearReduces) {
    list.add({partial(op), rep()}, {partial(op)});
    list.add({rep(), partial(op)}, {partial(op)});
  }
  return list.take();
}

}  // namespace

OpDef def_matmul() {
  return {.name = "matmul",
          .inputs = {{"a"}, {"b"}},
          .attrs = {},
          .infer = infer_matmul,
          .kernel = matmul_kernel,
          .vjp = vjp_matmul,
          .cost = cost_matmul,
          .sharding = matmul_rule,
          .localize_attrs = {},
          .local = {},
          .traits = {.elementwise = false, .view = false, .collective = false, .matmul_like = true}};
}

}  // namespace defs

Tensor matmul(const Tensor& a, const Tensor& b) { return call1(op::matmul(), {a, b}); }

}  // namespace px

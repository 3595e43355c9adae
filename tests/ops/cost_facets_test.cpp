// The cost facet of every op family checked exactly: each case gives an op's inputs (metas,
// no data) and the FLOPs and bytes read and written that a formula written here, from the
// shapes alone, says the roofline model should see. A final test lists the registry's ops
// with no case here against an explicit list, so a new op without a cost check fails.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "parallax/ops/dispatch.h"
#include "parallax/ops/registry.h"

namespace px {
namespace {

using Ints = std::vector<int64_t>;
using Metas = std::vector<TensorMeta>;

constexpr DType kF32 = DType::Float32;
constexpr DType kF64 = DType::Float64;
constexpr DType kI64 = DType::Int64;
constexpr DType kBool = DType::Bool;
constexpr DType kBF16 = DType::BFloat16;

// Element widths written out here rather than read from dtype_size, so they check it too.
double width(DType dtype) {
  constexpr std::pair<DType, double> kWidths[] = {{kF32, 4}, {kF64, 8}, {kI64, 8}, {kBool, 1}, {kBF16, 2}};
  for (const auto& [known, bytes] : kWidths) {
    if (known == dtype) return bytes;
  }
  return 0;
}

TensorMeta m(Shape shape, DType dtype = kF32) { return {std::move(shape), dtype}; }

double count(const Shape& shape) {
  double n = 1;
  for (int64_t extent : shape) n *= static_cast<double>(extent);
  return n;
}

double bytes(const TensorMeta& meta) { return count(meta.shape) * width(meta.dtype); }

double bytes(const Metas& metas) {
  double total = 0;
  for (const TensorMeta& meta : metas) total += bytes(meta);
  return total;
}

struct CostCase {
  std::string op;
  Metas inputs;
  Attrs attrs;
  OpCost expected;
};

// --- the formulas ---

// Memory-bound pointwise work: every input read once as stored (a broadcast operand is not
// re-read per output element), the output written once, `per_element` FLOPs per output element.
CostCase pointwise(std::string op, Metas in, TensorMeta out, double per_element, Attrs attrs = {}) {
  OpCost expected{per_element * count(out.shape), bytes(in), bytes(out)};
  return {std::move(op), std::move(in), std::move(attrs), expected};
}

// A copy (or fill): no arithmetic, inputs read and outputs written once.
CostCase copy(std::string op, Metas in, const Metas& out, Attrs attrs = {}) {
  OpCost expected{0, bytes(in), bytes(out)};
  return {std::move(op), std::move(in), std::move(attrs), expected};
}

// A view: moves nothing.
CostCase view(std::string op, Metas in, Attrs attrs) { return {std::move(op), std::move(in), std::move(attrs), {}}; }

// A reduction: one FLOP per input element, the input read and the output written once.
CostCase reduction(std::string op, TensorMeta in, TensorMeta out, Attrs attrs) {
  OpCost expected{count(in.shape), bytes(in), bytes(out)};
  return {std::move(op), {std::move(in)}, std::move(attrs), expected};
}

// A random fill: ~40 FLOPs per element (Philox rounds plus the transform), nothing read.
CostCase random_fill(std::string op, TensorMeta out, Attrs attrs) {
  OpCost expected{40 * count(out.shape), 0, bytes(out)};
  return {std::move(op), {}, std::move(attrs), expected};
}

// --- running a case ---

std::string describe(const CostCase& c) {
  std::string text = c.op + "(";
  for (size_t i = 0; i < c.inputs.size(); ++i) text += (i ? ", " : "") + c.inputs[i].str();
  return text + ")" + c.attrs.str();
}

OpCost cost_of(const CostCase& c) {
  const OpDef& op = builtin_registry().get(c.op);
  std::vector<Tensor> tensors;
  for (const TensorMeta& meta : c.inputs) tensors.push_back(Tensor::meta(meta.shape, meta.dtype));
  Attrs filled = check_call(op, tensors, c.attrs);
  return op.cost(c.inputs, op.infer(c.inputs, filled), filled);
}

void expect_cost(const CostCase& c) {
  SCOPED_TRACE(describe(c));
  OpCost got = cost_of(c);
  EXPECT_EQ(got.flops, c.expected.flops) << "flops of " << describe(c);
  EXPECT_EQ(got.bytes_read, c.expected.bytes_read) << "bytes read by " << describe(c);
  EXPECT_EQ(got.bytes_written, c.expected.bytes_written) << "bytes written by " << describe(c);
}

// --- the tables, one per family ---

// FLOPs per element as elementwise.h's convention sets them: 1 for plain arithmetic, sqrt 1,
// rsqrt 2, a transcendental 10, sigmoid 12, silu 13, gelu 15, gelu_backward 25.
std::vector<CostCase> unary_cases() {
  std::vector<CostCase> cases;
  struct Unary {
    const char* op;
    double flops;
    bool integer_ok;
  };
  for (Unary u : {Unary{"neg", 1, true}, Unary{"abs", 1, true}, Unary{"relu", 1, true}, Unary{"exp", 10, false},
                  Unary{"log", 10, false}, Unary{"sqrt", 1, false}, Unary{"rsqrt", 2, false}, Unary{"tanh", 10, false},
                  Unary{"sigmoid", 12, false}, Unary{"silu", 13, false}}) {
    cases.push_back(pointwise(u.op, {m({4, 6})}, m({4, 6}), u.flops));
    cases.push_back(pointwise(u.op, {m({2, 3, 5}, kF64)}, m({2, 3, 5}, kF64), u.flops));
    cases.push_back(pointwise(u.op, {m({7}, kBF16)}, m({7}, kBF16), u.flops));
    if (u.integer_ok) cases.push_back(pointwise(u.op, {m({3, 3}, kI64)}, m({3, 3}, kI64), u.flops));
  }
  for (const char* approximate : {"none", "tanh"}) {
    Attrs attrs{{"approximate", std::string(approximate)}};
    cases.push_back(pointwise("gelu", {m({4, 6})}, m({4, 6}), 15, attrs));
    cases.push_back(pointwise("gelu", {m({2, 3, 5}, kF64)}, m({2, 3, 5}, kF64), 15, attrs));
    cases.push_back(pointwise("gelu_backward", {m({4, 6}), m({4, 6})}, m({4, 6}), 25, attrs));
    cases.push_back(pointwise("gelu_backward", {m({5}, kBF16), m({5}, kBF16)}, m({5}, kBF16), 25, attrs));
  }
  return cases;
}

// One FLOP per output element; each input's own bytes, however far it broadcasts.
std::vector<CostCase> binary_cases() {
  std::vector<CostCase> cases;
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum"}) {
    cases.push_back(pointwise(op, {m({4, 1, 3}), m({5, 3})}, m({4, 5, 3}), 1));
    cases.push_back(pointwise(op, {m({2, 3}, kF64), m({}, kF64)}, m({2, 3}, kF64), 1));
    cases.push_back(pointwise(op, {m({6, 1}, kBF16), m({1, 4}, kBF16)}, m({6, 4}, kBF16), 1));
    if (std::string(op) != "div") cases.push_back(pointwise(op, {m({3}, kI64), m({2, 3}, kI64)}, m({2, 3}, kI64), 1));
  }
  return cases;
}

// One FLOP per element (pow: 1 for the exponents the kernel does as arithmetic, else 10).
std::vector<CostCase> scalar_cases() {
  std::vector<CostCase> cases;
  for (const char* op : {"add_scalar", "sub_scalar", "rsub_scalar", "mul_scalar", "div_scalar", "rdiv_scalar"}) {
    Attrs attrs{{"scalar", 3.0}};
    cases.push_back(pointwise(op, {m({4, 6})}, m({4, 6}), 1, attrs));
    cases.push_back(pointwise(op, {m({2, 3, 5}, kF64)}, m({2, 3, 5}, kF64), 1, attrs));
    cases.push_back(pointwise(op, {m({9}, kBF16)}, m({9}, kBF16), 1, attrs));
  }
  for (const char* op : {"add_scalar", "sub_scalar", "rsub_scalar", "mul_scalar"}) {
    cases.push_back(pointwise(op, {m({2, 5}, kI64)}, m({2, 5}, kI64), 1, {{"scalar", 2.0}}));
  }
  for (double exponent : {1.0, 2.0, 0.5, -1.0}) {
    cases.push_back(pointwise("pow", {m({4, 6})}, m({4, 6}), 1, {{"exponent", exponent}}));
    cases.push_back(pointwise("pow", {m({3, 2}, kF64)}, m({3, 2}, kF64), 1, {{"exponent", exponent}}));
  }
  for (double exponent : {3.0, 1.5, -0.5, 0.0}) {
    cases.push_back(pointwise("pow", {m({4, 6})}, m({4, 6}), 10, {{"exponent", exponent}}));
    cases.push_back(pointwise("pow", {m({5}, kBF16)}, m({5}, kBF16), 10, {{"exponent", exponent}}));
  }
  return cases;
}

// One FLOP per output element, a one-byte bool written per element.
std::vector<CostCase> compare_cases() {
  std::vector<CostCase> cases;
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    cases.push_back(pointwise(op, {m({4, 1}), m({1, 5})}, m({4, 5}, kBool), 1));
    cases.push_back(pointwise(op, {m({2, 3}, kF64), m({2, 3}, kF64)}, m({2, 3}, kBool), 1));
    cases.push_back(pointwise(op, {m({3}, kI64), m({}, kI64)}, m({3}, kBool), 1));
    cases.push_back(pointwise(op, {m({2, 2}, kBool), m({2, 1}, kBool)}, m({2, 2}, kBool), 1));
  }
  return cases;
}

std::vector<CostCase> where_cases() {
  return {
      pointwise("where", {m({4, 1}, kBool), m({1, 5}), m({})}, m({4, 5}), 1),
      pointwise("where", {m({2, 3}, kBool), m({2, 3}, kF64), m({2, 3}, kF64)}, m({2, 3}, kF64), 1),
      pointwise("where", {m({3}, kBool), m({2, 1}, kI64), m({3}, kI64)}, m({2, 3}, kI64), 1),
      pointwise("where", {m({}, kBool), m({6}, kBF16), m({6}, kBF16)}, m({6}, kBF16), 1),
  };
}

// A converting copy: the source dtype's bytes read, the target's written.
std::vector<CostCase> cast_cases() {
  return {
      copy("cast", {m({4, 6})}, {m({4, 6}, kBF16)}, {{"dtype", kBF16}}),
      copy("cast", {m({4, 6}, kBF16)}, {m({4, 6}, kF64)}, {{"dtype", kF64}}),
      copy("cast", {m({3, 5}, kI64)}, {m({3, 5}, kBool)}, {{"dtype", kBool}}),
      copy("cast", {m({7}, kBool)}, {m({7}, kF32)}, {{"dtype", kF32}}),
  };
}

std::vector<CostCase> reduction_cases() {
  return {
      reduction("sum", m({4, 8}), m({4}), {{"dims", Ints{1}}}),
      reduction("sum", m({2, 3, 4}, kF64), m({}, kF64), {}),
      reduction("sum", m({5, 6}, kI64), m({1, 6}, kI64), {{"dims", Ints{0}}, {"keepdim", true}}),
      reduction("sum", m({3, 4}, kBF16), m({3}, kBF16), {{"dims", Ints{-1}}}),
      reduction("mean", m({2, 3, 4}, kF64), m({1, 3, 1}, kF64), {{"dims", Ints{0, 2}}, {"keepdim", true}}),
      reduction("mean", m({6, 5}), m({}), {}),
      reduction("amax", m({4, 8}), m({8}), {{"dims", Ints{0}}}),
      reduction("amax", m({2, 3, 4}, kI64), m({2}, kI64), {{"dims", Ints{1, 2}}}),
      reduction("amin", m({4, 8}, kF64), m({4, 1}, kF64), {{"dims", Ints{1}}, {"keepdim", true}}),
      reduction("amin", m({3, 5}, kBF16), m({}, kBF16), {}),
      // argmax writes int64 indices whatever it reads.
      reduction("argmax", m({4, 8}), m({4}, kI64), {{"dim", int64_t{1}}}),
      reduction("argmax", m({2, 3, 4}, kF64), m({}, kI64), {}),
      reduction("argmax", m({5, 6}, kBF16), m({1, 6}, kI64), {{"dim", int64_t{0}}, {"keepdim", true}}),
  };
}

// matmul: 2·K FLOPs per output element (K the contraction), both operands read once as stored.
CostCase matmul(TensorMeta a, TensorMeta b, TensorMeta out, int64_t k) {
  OpCost expected{2.0 * count(out.shape) * static_cast<double>(k), bytes(a) + bytes(b), bytes(out)};
  return {"matmul", {std::move(a), std::move(b)}, {}, expected};
}

// linear(x [..., in], weight [out, in], bias [out]?): 2·in FLOPs per output element, plus one per
// output element for the bias.
CostCase linear(Metas in, TensorMeta out, int64_t in_features) {
  double outputs = count(out.shape);
  double flops = 2.0 * outputs * static_cast<double>(in_features) + (in.size() == 3 ? outputs : 0.0);
  OpCost expected{flops, bytes(in), bytes(out)};
  return {"linear", std::move(in), {}, expected};
}

std::vector<CostCase> linalg_cases() {
  return {
      matmul(m({4, 8, 16}), m({16, 32}), m({4, 8, 32}), 16),
      matmul(m({5, 6}, kF64), m({6, 7}, kF64), m({5, 7}, kF64), 6),
      // Batch dims broadcast: [2,1,5,6] @ [3,6,7] -> [2,3,5,7].
      matmul(m({2, 1, 5, 6}, kF64), m({3, 6, 7}, kF64), m({2, 3, 5, 7}, kF64), 6),
      matmul(m({3, 4}, kBF16), m({2, 4, 5}, kBF16), m({2, 3, 5}, kBF16), 4),
      // 1-D operands: a dot product, a matrix-vector and a vector-matrix product.
      matmul(m({8}), m({8}), m({}), 8),
      matmul(m({5, 6}), m({6}), m({5}), 6),
      matmul(m({6}, kF64), m({2, 6, 3}, kF64), m({2, 3}, kF64), 6),
      linear({m({6, 4}), m({5, 4}), m({5})}, m({6, 5}), 4),
      linear({m({2, 3, 4}, kF64), m({5, 4}, kF64)}, m({2, 3, 5}, kF64), 4),
      linear({m({7, 8}, kBF16), m({3, 8}, kBF16), m({3}, kBF16)}, m({7, 3}, kBF16), 8),
      linear({m({8}), m({2, 8})}, m({2}), 8),
  };
}

// q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]: per score, two GEMMs' 2·(D + Dv) FLOPs plus
// 5 for the softmax; the backward's five GEMMs 2·(3·D + 2·Dv) plus 10. Bytes as a fused kernel
// moves them: the operands in, the results out.
double scores(const Shape& batch, int64_t tq, int64_t tk) {
  return count(batch) * static_cast<double>(tq) * static_cast<double>(tk);
}

CostCase attention(TensorMeta q, TensorMeta k, TensorMeta v, TensorMeta out, double n_scores) {
  const double d = static_cast<double>(q.shape.back()), dv = static_cast<double>(v.shape.back());
  OpCost expected{n_scores * (2.0 * (d + dv) + 5.0), bytes(q) + bytes(k) + bytes(v), bytes(out)};
  return {"scaled_dot_product_attention", {std::move(q), std::move(k), std::move(v)}, {}, expected};
}

CostCase attention_backward(TensorMeta q, TensorMeta k, TensorMeta v, TensorMeta grad, double n_scores) {
  const double d = static_cast<double>(q.shape.back()), dv = static_cast<double>(v.shape.back());
  Metas in{std::move(q), std::move(k), std::move(v), std::move(grad)};
  OpCost expected{n_scores * (2.0 * (3.0 * d + 2.0 * dv) + 10.0), bytes(in), bytes(in) - bytes(in[3])};
  return {"scaled_dot_product_attention_backward", std::move(in), {}, expected};
}

std::vector<CostCase> attention_cases() {
  return {
      attention(m({2, 3, 16, 8}), m({2, 3, 12, 8}), m({2, 3, 12, 4}), m({2, 3, 16, 4}), scores({2, 3}, 16, 12)),
      // Batch dims broadcast: k and v shared across the leading 2.
      attention(m({2, 4, 5, 8}, kF64), m({4, 7, 8}, kF64), m({4, 7, 6}, kF64), m({2, 4, 5, 6}, kF64),
                scores({2, 4}, 5, 7)),
      attention(m({3, 6, 4}, kBF16), m({3, 6, 4}, kBF16), m({3, 6, 4}, kBF16), m({3, 6, 4}, kBF16), scores({3}, 6, 6)),
      attention_backward(m({2, 3, 16, 8}), m({2, 3, 12, 8}), m({2, 3, 12, 4}), m({2, 3, 16, 4}),
                         scores({2, 3}, 16, 12)),
      attention_backward(m({2, 4, 5, 8}, kF64), m({4, 7, 8}, kF64), m({4, 7, 6}, kF64), m({2, 4, 5, 6}, kF64),
                         scores({2, 4}, 5, 7)),
  };
}

// softmax and log_softmax: 5 FLOPs per element (max, subtract, exp, add, scale); their backward
// ops 4 (the row sum's multiply-add, then a subtract and a multiply) and read grad and y.
std::vector<CostCase> softmax_cases() {
  std::vector<CostCase> cases;
  for (const char* op : {"softmax", "log_softmax"}) {
    cases.push_back(pointwise(op, {m({4, 10})}, m({4, 10}), 5));
    cases.push_back(pointwise(op, {m({2, 3, 5}, kF64)}, m({2, 3, 5}, kF64), 5, {{"dim", int64_t{1}}}));
    cases.push_back(pointwise(op, {m({6, 7}, kBF16)}, m({6, 7}, kBF16), 5, {{"dim", int64_t{0}}}));
  }
  for (const char* op : {"softmax_backward", "log_softmax_backward"}) {
    cases.push_back(pointwise(op, {m({4, 10}), m({4, 10})}, m({4, 10}), 4));
    cases.push_back(
        pointwise(op, {m({2, 3, 5}, kF64), m({2, 3, 5}, kF64)}, m({2, 3, 5}, kF64), 4, {{"dim", int64_t{1}}}));
  }
  return cases;
}

// layer_norm and rms_norm: 7 FLOPs per element (statistics 3, normalize 2, affine 2), x and
// the parameters read, y written. The backward ops: 13 FLOPs per element of x (statistics 3,
// the row means 4, dx 4, dweight 2), grad, x (and the weight) read, dx (and dweight) written.
std::vector<CostCase> norm_cases() {
  std::vector<CostCase> cases;
  for (const char* op : {"layer_norm", "rms_norm"}) {
    cases.push_back(pointwise(op, {m({4, 8}), m({8})}, m({4, 8}), 7));
    cases.push_back(pointwise(op, {m({2, 3, 8}, kF64)}, m({2, 3, 8}, kF64), 7));
    cases.push_back(pointwise(op, {m({2, 3, 4}), m({3, 4})}, m({2, 3, 4}), 7, {{"ndims", int64_t{2}}}));
    cases.push_back(pointwise(op, {m({5, 6}, kBF16), m({6}, kBF16)}, m({5, 6}, kBF16), 7));
  }
  cases.push_back(pointwise("layer_norm", {m({4, 8}), m({8}), m({8})}, m({4, 8}), 7));
  cases.push_back(pointwise("layer_norm", {m({3, 2, 5}, kF64), m({2, 5}, kF64), m({2, 5}, kF64)}, m({3, 2, 5}, kF64), 7,
                            {{"ndims", int64_t{2}}}));
  // Without a weight there is one output, dx. (With one, see NormBackwardWithWeight below.)
  for (const char* op : {"layer_norm_backward", "rms_norm_backward"}) {
    cases.push_back(pointwise(op, {m({4, 8}), m({4, 8})}, m({4, 8}), 13));
    cases.push_back(
        pointwise(op, {m({2, 3, 4}, kF64), m({2, 3, 4}, kF64)}, m({2, 3, 4}, kF64), 13, {{"ndims", int64_t{2}}}));
  }
  return cases;
}

std::vector<CostCase> embedding_cases() {
  // embedding(weight [V, D], indices): gathers only the rows it looks up, so it reads the
  // output's worth of the table plus the indices; no FLOPs.
  auto embedding = [](TensorMeta weight, TensorMeta indices, TensorMeta out) {
    OpCost expected{0, bytes(out) + bytes(indices), bytes(out)};
    return CostCase{"embedding", {std::move(weight), std::move(indices)}, {}, expected};
  };
  // embedding_backward(grad, indices): one add per gradient element into a [num_weights, D] table.
  auto backward = [](TensorMeta grad, TensorMeta indices, int64_t num_weights, TensorMeta table) {
    OpCost expected{count(grad.shape), bytes(grad) + bytes(indices), bytes(table)};
    return CostCase{
        "embedding_backward", {std::move(grad), std::move(indices)}, {{"num_weights", num_weights}}, expected};
  };
  return {
      embedding(m({10, 4}), m({2, 3}, kI64), m({2, 3, 4})),
      embedding(m({100, 16}, kF64), m({5}, kI64), m({5, 16}, kF64)),
      embedding(m({50, 8}, kBF16), m({4, 2}, kI64), m({4, 2, 8}, kBF16)),
      backward(m({2, 3, 4}), m({2, 3}, kI64), 10, m({10, 4})),
      backward(m({5, 16}, kF64), m({5}, kI64), 100, m({100, 16}, kF64)),
      // one_hot: a fill, indices read and the [..., C] output written.
      copy("one_hot", {m({5}, kI64)}, {m({5, 7})}, {{"num_classes", int64_t{7}}}),
      copy("one_hot", {m({2, 3}, kI64)}, {m({2, 3, 4}, kI64)}, {{"num_classes", int64_t{4}}, {"dtype", kI64}}),
  };
}

std::vector<CostCase> loss_cases() {
  // nll_loss(logp [N, C], target [N]): one FLOP and one score read per row, plus the targets.
  auto nll = [](TensorMeta logp, TensorMeta target, TensorMeta out, std::string reduction) {
    double rows = count(target.shape);
    OpCost expected{rows, rows * width(logp.dtype) + bytes(target), bytes(out)};
    return CostCase{"nll_loss", {std::move(logp), std::move(target)}, {{"reduction", std::move(reduction)}}, expected};
  };
  // cross_entropy(logits [N, C], target [N]): 4 FLOPs per logit (max, subtract, exp, add).
  auto cross_entropy = [](TensorMeta logits, TensorMeta target, TensorMeta out, std::string reduction) {
    OpCost expected{4 * count(logits.shape), bytes(logits) + bytes(target), bytes(out)};
    return CostCase{
        "cross_entropy", {std::move(logits), std::move(target)}, {{"reduction", std::move(reduction)}}, expected};
  };
  return {
      nll(m({6, 5}), m({6}, kI64), m({}), "mean"),
      nll(m({6, 5}, kF64), m({6}, kI64), m({6}, kF64), "none"),
      nll(m({4, 9}, kBF16), m({4}, kI64), m({}, kBF16), "sum"),
      cross_entropy(m({6, 5}), m({6}, kI64), m({}), "mean"),
      cross_entropy(m({6, 5}, kF64), m({6}, kI64), m({6}, kF64), "none"),
      cross_entropy(m({4, 9}, kBF16), m({4}, kI64), m({}, kBF16), "sum"),
  };
}

std::vector<CostCase> rope_dropout_cases() {
  return {
      // rope: 3 FLOPs per element (two multiplies and an add).
      pointwise("rope", {m({2, 6, 8})}, m({2, 6, 8}), 3),
      pointwise("rope", {m({3, 4, 10}, kF64)}, m({3, 4, 10}, kF64), 3, {{"inverse", true}}),
      pointwise("rope", {m({5, 4}, kBF16)}, m({5, 4}, kBF16), 3, {{"theta", 500000.0}}),
      // dropout: 2 FLOPs per element (a compare and a multiply).
      pointwise("dropout", {m({4, 5})}, m({4, 5}), 2, {{"p", 0.1}, {"seed", int64_t{1}}, {"offset", int64_t{0}}}),
      pointwise("dropout", {m({2, 3, 7}, kF64)}, m({2, 3, 7}, kF64), 2,
                {{"p", 0.5}, {"seed", int64_t{7}}, {"offset", int64_t{64}}}),
      pointwise("dropout", {m({9}, kBF16)}, m({9}, kBF16), 2,
                {{"p", 0.0}, {"seed", int64_t{3}}, {"offset", int64_t{0}}}),
  };
}

// Views alias their input: nothing moves. (reshape is charged as one too: in a graph its input
// is contiguous, and from metas alone the rare copy cannot be told.)
std::vector<CostCase> view_cases() {
  return {
      view("view", {m({4, 6})}, {{"shape", Ints{2, 12}}}),
      view("view", {m({2, 3, 4}, kF64)}, {{"shape", Ints{-1}}}),
      view("reshape", {m({4, 6})}, {{"shape", Ints{3, 8}}}),
      view("reshape", {m({2, 3, 4}, kBF16)}, {{"shape", Ints{6, -1}}}),
      view("permute", {m({2, 3, 4})}, {{"dims", Ints{2, 0, 1}}}),
      view("permute", {m({5, 6}, kF64)}, {{"dims", Ints{1, 0}}}),
      view("transpose", {m({2, 3, 4})}, {{"dim0", int64_t{0}}, {"dim1", int64_t{2}}}),
      view("transpose", {m({5, 6}, kI64)}, {{"dim0", int64_t{-1}}, {"dim1", int64_t{-2}}}),
      view("slice", {m({6, 4})},
           {{"dim", int64_t{0}}, {"start", int64_t{1}}, {"end", int64_t{5}}, {"step", int64_t{2}}}),
      view("slice", {m({3, 8}, kF64)}, {{"dim", int64_t{1}}, {"start", int64_t{0}}, {"end", int64_t{4}}}),
      view("narrow", {m({6, 4})}, {{"dim", int64_t{0}}, {"start", int64_t{2}}, {"length", int64_t{3}}}),
      view("narrow", {m({3, 8}, kBF16)}, {{"dim", int64_t{1}}, {"start", int64_t{4}}, {"length", int64_t{4}}}),
      view("select", {m({6, 4})}, {{"dim", int64_t{1}}, {"index", int64_t{2}}}),
      view("select", {m({2, 3, 4}, kF64)}, {{"dim", int64_t{0}}, {"index", int64_t{-1}}}),
      view("expand", {m({3, 1})}, {{"shape", Ints{3, 4}}}),
      view("expand", {m({5}, kF64)}, {{"shape", Ints{2, 5}}}),
      view("squeeze", {m({1, 3, 1})}, {}),
      view("squeeze", {m({1, 3, 1}, kF64)}, {{"dims", Ints{0}}}),
      view("unsqueeze", {m({3, 4})}, {{"dim", int64_t{0}}}),
      view("unsqueeze", {m({3, 4}, kI64)}, {{"dim", int64_t{-1}}}),
      view("split", {m({6, 4})}, {{"sizes", Ints{2, 4}}}),
      view("split", {m({3, 8}, kF64)}, {{"sizes", Ints{3, 3, 2}}, {"dim", int64_t{1}}}),
      view("chunk", {m({6, 4})}, {{"chunks", int64_t{3}}}),
      view("chunk", {m({3, 8}, kBF16)}, {{"chunks", int64_t{2}}, {"dim", int64_t{1}}}),
  };
}

// Copies: every input read once, every output written once, no FLOPs.
std::vector<CostCase> copy_cases() {
  auto slice_backward = [](TensorMeta grad, TensorMeta out, Attrs attrs) {
    return copy("slice_backward", {std::move(grad)}, {std::move(out)}, std::move(attrs));
  };
  return {
      // contiguous is charged as a copy: from metas alone it cannot tell an already dense input.
      copy("contiguous", {m({4, 6})}, {m({4, 6})}),
      copy("contiguous", {m({2, 3, 4}, kF64)}, {m({2, 3, 4}, kF64)}),
      copy("clone", {m({4, 6})}, {m({4, 6})}),
      copy("clone", {m({5}, kBF16)}, {m({5}, kBF16)}),
      // The gradient of a slice: grad read, the whole zero-padded input shape written.
      slice_backward(m({2, 4}), m({6, 4}),
                     {{"shape", Ints{6, 4}},
                      {"dim", int64_t{0}},
                      {"start", int64_t{1}},
                      {"end", int64_t{5}},
                      {"step", int64_t{2}}}),
      slice_backward(m({3, 2}, kF64), m({3, 8}, kF64),
                     {{"shape", Ints{3, 8}}, {"dim", int64_t{1}}, {"start", int64_t{2}}, {"end", int64_t{4}}}),
      copy("cat", {m({2, 3}), m({4, 3})}, {m({6, 3})}),
      copy("cat", {m({2, 1}, kF64), m({2, 5}, kF64), m({2, 2}, kF64)}, {m({2, 8}, kF64)}, {{"dim", int64_t{1}}}),
      copy("stack", {m({2, 3}), m({2, 3}), m({2, 3})}, {m({3, 2, 3})}),
      copy("stack", {m({4}, kBF16), m({4}, kBF16)}, {m({4, 2}, kBF16)}, {{"dim", int64_t{1}}}),
      copy("triu", {m({4, 5})}, {m({4, 5})}, {{"diagonal", int64_t{1}}}),
      copy("triu", {m({2, 3, 3}, kF64)}, {m({2, 3, 3}, kF64)}),
      copy("tril", {m({4, 5})}, {m({4, 5})}),
      copy("tril", {m({2, 3, 3}, kBF16)}, {m({2, 3, 3}, kBF16)}, {{"diagonal", int64_t{-1}}}),
  };
}

// Factories read nothing: full and arange write their output (no FLOPs), the random fills ~40
// FLOPs per element.
std::vector<CostCase> factory_cases() {
  return {
      copy("full", {}, {m({3, 4})}, {{"shape", Ints{3, 4}}, {"value", 1.5}}),
      copy("full", {}, {m({2, 5, 7}, kF64)}, {{"shape", Ints{2, 5, 7}}, {"value", 0.0}, {"dtype", kF64}}),
      copy("full", {}, {m({}, kBool)}, {{"shape", Ints{}}, {"value", 1.0}, {"dtype", kBool}}),
      // ceil((10 - 0) / 3) = 4 int64 elements; ceil((2 - -1) / 0.25) = 12 bf16 elements.
      copy("arange", {}, {m({4}, kI64)}, {{"end", 10.0}, {"step", 3.0}}),
      copy("arange", {}, {m({12}, kBF16)}, {{"start", -1.0}, {"end", 2.0}, {"step", 0.25}, {"dtype", kBF16}}),
      random_fill("uniform", m({5, 6}), {{"shape", Ints{5, 6}}, {"seed", int64_t{1}}}),
      random_fill("uniform", m({3, 4}, kF64), {{"shape", Ints{3, 4}}, {"seed", int64_t{2}}, {"dtype", kF64}}),
      random_fill("normal", m({5, 6}), {{"shape", Ints{5, 6}}, {"seed", int64_t{3}}}),
      random_fill("normal", m({7}, kBF16),
                  {{"shape", Ints{7}}, {"seed", int64_t{4}}, {"offset", int64_t{9}}, {"dtype", kBF16}}),
  };
}

std::vector<std::vector<CostCase>> all_tables() {
  return {unary_cases(),     binary_cases(), scalar_cases(),    compare_cases(), where_cases(),       cast_cases(),
          reduction_cases(), linalg_cases(), attention_cases(), softmax_cases(), norm_cases(),        embedding_cases(),
          loss_cases(),      view_cases(),   copy_cases(),      factory_cases(), rope_dropout_cases()};
}

void expect_all(const std::vector<CostCase>& cases) {
  for (const CostCase& c : cases) expect_cost(c);
}

TEST(CostFacets, ElementwiseUnary) { expect_all(unary_cases()); }
TEST(CostFacets, ElementwiseBinaryBroadcasting) { expect_all(binary_cases()); }
TEST(CostFacets, ElementwiseWithScalar) { expect_all(scalar_cases()); }
TEST(CostFacets, Comparisons) { expect_all(compare_cases()); }
TEST(CostFacets, Where) { expect_all(where_cases()); }
TEST(CostFacets, Cast) { expect_all(cast_cases()); }
TEST(CostFacets, Reductions) { expect_all(reduction_cases()); }
TEST(CostFacets, MatmulAndLinear) { expect_all(linalg_cases()); }
TEST(CostFacets, AttentionAndItsBackward) { expect_all(attention_cases()); }
TEST(CostFacets, SoftmaxAndItsBackward) { expect_all(softmax_cases()); }
TEST(CostFacets, NormsAndTheirBackward) { expect_all(norm_cases()); }
TEST(CostFacets, EmbeddingAndOneHot) { expect_all(embedding_cases()); }
TEST(CostFacets, Losses) { expect_all(loss_cases()); }
TEST(CostFacets, RopeAndDropout) { expect_all(rope_dropout_cases()); }
TEST(CostFacets, ViewsMoveNothing) { expect_all(view_cases()); }
TEST(CostFacets, CopiesReadAndWriteOnce) { expect_all(copy_cases()); }
TEST(CostFacets, Factories) { expect_all(factory_cases()); }

// The formula must not hide in the test's own helpers: a case with a made-up expectation fails.
TEST(CostFacets, AWrongExpectationIsCaught) {
  CostCase c = pointwise("add", {m({4, 1, 3}), m({5, 3})}, m({4, 5, 3}), 1);
  c.expected.bytes_read = bytes(m({4, 5, 3})) * 2;  // as if each input were read per output element
  EXPECT_NE(cost_of(c).bytes_read, c.expected.bytes_read);
}

// Under a causal mask the fused kernels (kernels/attention.cpp) compute, per block of 64
// queries, the scores of every key up to the block's last query: sum over blocks of rows ·
// min(block end, Tk) per batch entry, about half of Tq·Tk at long sequences (the fused f32/f64
// kernel; bfloat16 computes every score).
double causal_scores(const Shape& batch, int64_t tq, int64_t tk) {
  double seen = 0;
  for (int64_t i0 = 0; i0 < tq; i0 += 64) {
    const int64_t rows = std::min<int64_t>(64, tq - i0);
    seen += static_cast<double>(rows * std::min(i0 + rows, tk));
  }
  return count(batch) * seen;
}

TEST(CostFacets, CausalAttentionCountsOnlyTheScoresItComputes) {
  EXPECT_EQ(causal_scores({1}, 128, 128), 64.0 * 64 + 64.0 * 128);
  EXPECT_EQ(causal_scores({1}, 16, 16), 16.0 * 16);
  std::vector<CostCase> cases{
      attention(m({2, 3, 16, 8}), m({2, 3, 16, 8}), m({2, 3, 16, 4}), m({2, 3, 16, 4}), causal_scores({2, 3}, 16, 16)),
      attention(m({4, 6, 8}, kF64), m({4, 9, 8}, kF64), m({4, 9, 8}, kF64), m({4, 6, 8}, kF64),
                causal_scores({4}, 6, 9)),
      attention(m({2, 200, 8}), m({2, 200, 8}), m({2, 200, 4}), m({2, 200, 4}), causal_scores({2}, 200, 200)),
      attention(m({2, 70, 8}), m({2, 100, 8}), m({2, 100, 4}), m({2, 70, 4}), causal_scores({2}, 70, 100)),
      attention_backward(m({2, 3, 16, 8}), m({2, 3, 16, 8}), m({2, 3, 16, 4}), m({2, 3, 16, 4}),
                         causal_scores({2, 3}, 16, 16)),
      attention_backward(m({1, 2, 130, 8}), m({1, 2, 130, 8}), m({1, 2, 130, 4}), m({1, 2, 130, 4}),
                         causal_scores({1, 2}, 130, 130)),
      // bfloat16 runs the composite path, which computes every score, masked or not.
      attention(m({2, 16, 8}, kBF16), m({2, 16, 8}, kBF16), m({2, 16, 8}, kBF16), m({2, 16, 8}, kBF16), 2.0 * 16 * 16),
  };
  for (CostCase& c : cases) {
    c.attrs.set("causal", true);
    expect_cost(c);
  }
}

// With a weight, the norm backward ops also output dweight, whose work is inside the 13 FLOPs per
// element of x: 13·numel(x), not 13 per element of every output.
TEST(CostFacets, NormBackwardWithWeightChargesFlopsPerElementOfXOnly) {
  for (const char* op : {"layer_norm_backward", "rms_norm_backward"}) {
    Metas in{m({4, 8}), m({4, 8}), m({8})};
    expect_cost({op, in, {}, OpCost{13.0 * 32, bytes(in), bytes(m({4, 8})) + bytes(m({8}))}});
    Metas in64{m({2, 3, 4}, kF64), m({2, 3, 4}, kF64), m({3, 4}, kF64)};
    expect_cost({op, in64, {{"ndims", int64_t{2}}}, OpCost{13.0 * 24, bytes(in64), bytes(in64[1]) + bytes(in64[2])}});
  }
}

// Every registered op has a case above, or is listed here with the reason it has none.
TEST(CostFacets, EveryRegisteredOpHasACaseOrIsListedAsUncovered) {
  std::set<std::string> covered;
  for (const std::vector<CostCase>& table : all_tables()) {
    for (const CostCase& c : table) covered.insert(c.op);
  }
  std::vector<std::string> missing;
  for (const std::string& name : builtin_registry().names()) {
    if (!covered.contains(name)) missing.push_back(name);
  }
  // Deliberately uncovered: the collectives, registered from src/dist/comm_ops.cpp. Their time
  // is the wire's (dist/comm_cost.h models it from the group size and the links), so they
  // belong with the dist layer's tests, not with the per-device FLOPs and bytes here.
  const std::vector<std::string> uncovered{"all_gather", "all_reduce", "all_to_all", "reduce_scatter"};
  EXPECT_EQ(missing, uncovered) << "an op without a cost case here: add one (or list it, with the reason)";
  // Every op a case names is registered (a typo would otherwise go unnoticed).
  for (const std::string& name : covered) EXPECT_NE(builtin_registry().find(name), nullptr) << name;
}

}  // namespace
}  // namespace px

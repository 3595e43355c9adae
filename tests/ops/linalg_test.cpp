// matmul and linear through the dispatcher, against naive float64 references
// written here (torch.matmul semantics spelled out loop by loop), on contiguous,
// non-contiguous (transposed) and broadcast operands; inference vs kernel,
// meta inputs, cost, VJPs against finite differences, and the errors.

#include "parallax/ops/linalg.h"

#include <gtest/gtest.h>

#include <functional>

#include "parallax/ops/dispatch.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::all_close;
using testing::check_vjp;
using testing::non_contiguous;
using testing::random_tensor;

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.what();
  }
  return "<no error>";
}

template <class E>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& pieces) {
  EXPECT_THROW(fn(), E);
  std::string message = message_of(fn);
  for (const std::string& piece : pieces) {
    EXPECT_NE(message.find(piece), std::string::npos) << "message: " << message << "\nmissing: " << piece;
  }
}

// Row-major index of batch element `linear` of `batch` inside an operand whose
// own batch dims are `own` (right-aligned; size-1 dims broadcast).
int64_t batch_index(int64_t linear, const Shape& batch, const Shape& own) {
  int64_t index = 0, scale = 1;
  for (size_t i = 0; i < batch.size(); ++i) {
    size_t d = batch.size() - 1 - i;
    int64_t coordinate = linear % batch[d];
    linear /= batch[d];
    if (i < own.size()) {
      int64_t size = own[own.size() - 1 - i];
      index += (size == 1 ? 0 : coordinate) * scale;
      scale *= size;
    }
  }
  return index;
}

// torch.matmul: lift 1-D operands, broadcast batch dims, multiply, drop the lifted dims.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  if (a.dim() == 1) as.insert(as.begin(), 1);
  if (b.dim() == 1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  Shape batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    int64_t da = i < a_batch.size() ? a_batch[a_batch.size() - 1 - i] : 1;
    int64_t db = i < b_batch.size() ? b_batch[b_batch.size() - 1 - i] : 1;
    batch[batch.size() - 1 - i] = std::max(da, db);
  }
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), out;
  for (int64_t e = 0; e < numel(batch); ++e) {
    int64_t ai = batch_index(e, batch, a_batch) * m * k, bi = batch_index(e, batch, b_batch) * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double total = 0;
        for (int64_t p = 0; p < k; ++p) total += av[ai + i * k + p] * bv[bi + p * n + j];
        out.push_back(total);
      }
    }
  }
  Shape shape = batch;
  if (a.dim() > 1) shape.push_back(m);
  if (b.dim() > 1) shape.push_back(n);
  return Tensor::from_vector(out, shape, DType::Float64);
}

// x·wᵀ + b over the last dim of x.
Tensor naive_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  int64_t in = w.shape()[1], out = w.shape()[0], rows = x.numel() / in;
  std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(), result;
  std::vector<double> bv = bias.defined() ? bias.to_vector<double>() : std::vector<double>(out, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double total = bv[o];
      for (int64_t i = 0; i < in; ++i) total += xv[r * in + i] * wv[o * in + i];
      result.push_back(total);
    }
  }
  Shape shape(x.shape().begin(), x.shape().end() - 1);
  shape.push_back(out);
  return Tensor::from_vector(result, shape, DType::Float64);
}

// A view of `t` broadcast along a new leading dim of size `copies` (stride 0).
Tensor broadcast_view(const Tensor& t, int64_t copies) {
  Shape shape = t.shape();
  Strides strides = t.strides();
  shape.insert(shape.begin(), copies);
  strides.insert(strides.begin(), 0);
  return Tensor::alias(t, shape, strides, t.offset());
}

struct ShapePair {
  Shape a, b;
};

const std::vector<ShapePair> kShapes{
    {{3, 4}, {4, 5}},    {{4}, {4, 5}},       {{3, 4}, {4}},          {{4}, {4}},
    {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}}, {{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}},
    {{4}, {2, 3, 4, 5}}, {{2, 3, 3, 4}, {4}}, {{1, 3, 4}, {2, 4, 5}}, {{2, 3, 0}, {0, 5}},
    {{0, 4}, {4, 5}},
};

TEST(Matmul, MatchesNaiveForEveryRankCombination) {
  uint64_t seed = 0;
  for (const ShapePair& s : kShapes) {
    Tensor a = random_tensor(s.a, DType::Float64, ++seed), b = random_tensor(s.b, DType::Float64, ++seed);
    Tensor expected = naive_matmul(a, b);
    EXPECT_TRUE(all_close(matmul(a, b), expected, 1e-12, 1e-12)) << shape_str(s.a) << " @ " << shape_str(s.b);
    EXPECT_TRUE(all_close(matmul(non_contiguous(a), non_contiguous(b)), expected, 1e-12, 1e-12))
        << "non-contiguous " << shape_str(s.a) << " @ " << shape_str(s.b);
  }
}

TEST(Matmul, BroadcastAndStridedOperands) {
  Tensor a = random_tensor({3, 4}, DType::Float64, 20), b = random_tensor({2, 4, 5}, DType::Float64, 21);
  // lhs broadcast over a batch through stride 0, rhs sliced (every other column).
  Tensor a_bcast = broadcast_view(a, 2);
  Tensor wide = random_tensor({2, 4, 10}, DType::Float64, 22);
  Tensor b_sliced = Tensor::alias(wide, {2, 4, 5}, {40, 10, 2}, 1);
  EXPECT_TRUE(all_close(matmul(a_bcast, b), naive_matmul(a_bcast, b), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(matmul(a, b_sliced), naive_matmul(a, b_sliced), 1e-12, 1e-12));
  // Rows broadcast inside a matrix (stride 0 within the matrix): copied before the GEMM.
  Tensor row_bcast = Tensor::alias(a, {3, 4}, {0, 1}, 0);
  EXPECT_TRUE(all_close(matmul(row_bcast, b), naive_matmul(row_bcast, b), 1e-12, 1e-12));
  // A batch whose dims are permuted cannot fold into one GEMM; still right.
  Tensor batch = random_tensor({4, 2, 3, 4}, DType::Float64, 23);
  Tensor permuted = Tensor::alias(batch, {2, 4, 3, 4}, {12, 24, 4, 1}, 0);
  Tensor w = random_tensor({4, 5}, DType::Float64, 24);
  EXPECT_TRUE(all_close(matmul(permuted, w), naive_matmul(permuted, w), 1e-12, 1e-12));
}

TEST(Matmul, Float32AndBFloat16) {
  Tensor a = random_tensor({2, 8, 16}, DType::Float64, 30), b = random_tensor({16, 4}, DType::Float64, 31);
  Tensor expected = naive_matmul(a, b);
  Tensor out32 = matmul(a.to(DType::Float32), b.to(DType::Float32));
  EXPECT_EQ(out32.dtype(), DType::Float32);
  EXPECT_TRUE(all_close(out32, expected, 1e-5, 1e-5));
  Tensor a16 = a.to(DType::BFloat16), b16 = b.to(DType::BFloat16);
  Tensor out16 = matmul(a16, b16);
  EXPECT_EQ(out16.dtype(), DType::BFloat16);
  EXPECT_TRUE(all_close(out16, naive_matmul(a16, b16), 1e-2, 1e-2));
}

TEST(Matmul, ShapeAndDtypeErrorsNameTheOpAndShapes) {
  Tensor a = Tensor::empty({8, 512}), b = Tensor::empty({256, 1024});
  EXPECT_EQ(message_of([&] { matmul(a, b); }),
            "ShapeError: matmul: lhs f32[8,512] and rhs f32[256,1024] cannot be contracted (lhs dim 1 = 512, rhs "
            "dim 0 = 256)");
  expect_error<ShapeError>(
      [] {
        matmul(Tensor::empty({2, 3, 4}), Tensor::empty({5, 4}));
      },
      {"matmul", "f32[2,3,4]", "f32[5,4]", "lhs dim 2 = 4", "rhs dim 0 = 5"});
  expect_error<ShapeError>(
      [] {
        matmul(Tensor::empty({2, 3, 4}), Tensor::empty({3, 4, 5}));
      },
      {"matmul", "batch dims", "f32[2,3,4]", "f32[3,4,5]", "[2] vs [3]"});
  expect_error<ShapeError>([] { matmul(Tensor::scalar(1.0), Tensor::empty({3})); }, {"matmul", "at least 1 dim"});
  expect_error<DTypeError>(
      [] {
        matmul(Tensor::empty({2, 2}, DType::Int64), Tensor::empty({2, 2}, DType::Int64));
      },
      {"matmul", "i64[2,2]", "not supported"});
  expect_error<DTypeError>(
      [] {
        matmul(Tensor::empty({2, 2}), Tensor::empty({2, 2}, DType::Float64));
      },
      {"matmul", "f32[2,2]", "f64[2,2]"});
}

TEST(Matmul, InferenceMetaAndCost) {
  const OpDef& op = builtin_registry().get("matmul");
  for (const ShapePair& s : kShapes) {
    Tensor a = random_tensor(s.a, DType::Float32, 1), b = random_tensor(s.b, DType::Float32, 2);
    EXPECT_EQ(matmul(a, b).meta_info(), infer_metas(op, {a.meta_info(), b.meta_info()}, {})[0]);
  }
  Tensor big = matmul(Tensor::meta({64, 2048, 8192}, DType::BFloat16), Tensor::meta({8192, 65536}, DType::BFloat16));
  EXPECT_TRUE(big.is_meta());
  EXPECT_EQ(big.meta_info(), (TensorMeta{{64, 2048, 65536}, DType::BFloat16}));
  std::vector<TensorMeta> in{{{4, 8, 16}, DType::Float32}, {{16, 32}, DType::Float32}};
  OpCost cost = op.cost(in, op.infer(in, {}), {});
  EXPECT_EQ(cost.flops, 2.0 * 4 * 8 * 32 * 16);
  EXPECT_EQ(cost.bytes_read, (4 * 8 * 16 + 16 * 32) * 4.0);
  EXPECT_EQ(cost.bytes_written, 4 * 8 * 32 * 4.0);
}

TEST(MatmulVjp, MatchesFiniteDifferencesForEveryRankCombination) {
  uint64_t seed = 100;
  for (const ShapePair& s : kShapes) {
    Tensor a = random_tensor(s.a, DType::Float64, ++seed), b = random_tensor(s.b, DType::Float64, ++seed);
    EXPECT_TRUE(check_vjp("matmul", {a, b})) << shape_str(s.a) << " @ " << shape_str(s.b);
  }
  Tensor a = random_tensor({2, 3, 4}, DType::Float64, 1), b = random_tensor({4, 5}, DType::Float64, 2);
  EXPECT_TRUE(check_vjp("matmul", {non_contiguous(a), non_contiguous(b)}));
}

TEST(Linear, MatchesNaiveWithAndWithoutBias) {
  Tensor w = random_tensor({5, 4}, DType::Float64, 40), bias = random_tensor({5}, DType::Float64, 41);
  for (const Shape& shape : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 4}, Shape{0, 4}}) {
    Tensor x = random_tensor(shape, DType::Float64, 42);
    EXPECT_TRUE(all_close(linear(x, w, bias), naive_linear(x, w, bias), 1e-12, 1e-12)) << shape_str(shape);
    EXPECT_TRUE(all_close(linear(x, w), naive_linear(x, w, Tensor()), 1e-12, 1e-12)) << shape_str(shape);
    EXPECT_TRUE(all_close(linear(non_contiguous(x), non_contiguous(w), non_contiguous(bias)), naive_linear(x, w, bias),
                          1e-12, 1e-12))
        << "non-contiguous " << shape_str(shape);
  }
  Tensor x = broadcast_view(random_tensor({3, 4}, DType::Float64, 43), 2);
  EXPECT_TRUE(all_close(linear(x, w, bias), naive_linear(x, w, bias), 1e-12, 1e-12)) << "broadcast input";
}

TEST(Linear, Float32AndBFloat16) {
  Tensor x = random_tensor({6, 32}, DType::Float64, 50), w = random_tensor({8, 32}, DType::Float64, 51);
  Tensor bias = random_tensor({8}, DType::Float64, 52);
  Tensor expected = naive_linear(x, w, bias);
  EXPECT_TRUE(
      all_close(linear(x.to(DType::Float32), w.to(DType::Float32), bias.to(DType::Float32)), expected, 1e-5, 1e-5));
  Tensor x16 = x.to(DType::BFloat16), w16 = w.to(DType::BFloat16), b16 = bias.to(DType::BFloat16);
  Tensor out16 = linear(x16, w16, b16);
  EXPECT_EQ(out16.dtype(), DType::BFloat16);
  EXPECT_TRUE(all_close(out16, naive_linear(x16, w16, b16), 2e-2, 2e-2));
}

TEST(Linear, ErrorsInferenceMetaAndCost) {
  expect_error<ShapeError>(
      [] {
        linear(Tensor::empty({8, 512}), Tensor::empty({1024, 256}));
      },
      {"linear", "input f32[8,512]", "weight f32[1024,256]", "input dim 1 = 512", "weight dim 1 = 256"});
  expect_error<ShapeError>(
      [] {
        linear(Tensor::empty({2, 4}), Tensor::empty({3, 4}), Tensor::empty({4}));
      },
      {"linear", "bias f32[4]", "expected shape [3]"});
  expect_error<ShapeError>([] { linear(Tensor::empty({2, 4}), Tensor::empty({4})); }, {"linear", "weight [out, in]"});
  expect_error<DTypeError>(
      [] {
        linear(Tensor::empty({2, 4}), Tensor::empty({3, 4}, DType::Float64));
      },
      {"linear", "f32[2,4]", "f64[3,4]"});
  Tensor huge = linear(Tensor::meta({16, 4096, 8192}, DType::BFloat16), Tensor::meta({32768, 8192}, DType::BFloat16));
  EXPECT_TRUE(huge.is_meta());
  EXPECT_EQ(huge.shape(), (Shape{16, 4096, 32768}));
  const OpDef& op = builtin_registry().get("linear");
  Tensor x = random_tensor({2, 3, 4}, DType::Float32, 1), w = random_tensor({5, 4}, DType::Float32, 2);
  Tensor b = random_tensor({5}, DType::Float32, 3);
  EXPECT_EQ(linear(x, w, b).meta_info(), infer_metas(op, {x.meta_info(), w.meta_info(), b.meta_info()}, {})[0]);
  std::vector<TensorMeta> in{x.meta_info(), w.meta_info(), b.meta_info()};
  OpCost cost = op.cost(in, op.infer(in, {}), {});
  EXPECT_EQ(cost.flops, 2.0 * 6 * 5 * 4 + 6 * 5);
  EXPECT_EQ(cost.bytes_read, (24 + 20 + 5) * 4.0);
  EXPECT_EQ(cost.bytes_written, 30 * 4.0);
}

TEST(LinearVjp, MatchesFiniteDifferences) {
  Tensor w = random_tensor({5, 4}, DType::Float64, 60), bias = random_tensor({5}, DType::Float64, 61);
  for (const Shape& shape : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}}) {
    Tensor x = random_tensor(shape, DType::Float64, 62);
    EXPECT_TRUE(check_vjp("linear", {x, w, bias})) << shape_str(shape);
    EXPECT_TRUE(check_vjp("linear", {x, w})) << shape_str(shape);
  }
  EXPECT_TRUE(check_vjp("linear", {non_contiguous(random_tensor({3, 4}, DType::Float64, 63)), non_contiguous(w)}));
}

}  // namespace
}  // namespace px

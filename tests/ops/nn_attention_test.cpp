// scaled_dot_product_attention: against a naive float64 loop reference (plain,
// causal with Tq < Tk and Tq > Tk, custom scale, broadcast batch dims, strided
// inputs), VJPs, cost, errors and meta inputs.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops/nn_test_helpers.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/factory.h"
#include "parallax/ops/linalg.h"
#include "parallax/ops/nn.h"
#include "parallax/ops/reduction.h"
#include "support/test_util.h"

namespace px {
namespace {

using testing::all_close;
using testing::check_vjp;
using testing::mentions;
using testing::non_contiguous;
using testing::random_tensor;
using testing::thrown_message;

// Row-major values of a [batch, T, D] tensor whose leading dims broadcast to `batch` entries (b % own batch).
struct Flat {
  std::vector<double> v;
  int64_t batch, t, d;
  double at(int64_t b, int64_t i, int64_t j) const { return v[((b % batch) * t + i) * d + j]; }
};

Flat flat(const Tensor& x) {
  int64_t t = x.size(-2), d = x.size(-1);
  return {x.to_vector<double>(), x.numel() / (t * d), t, d};
}

// q, k, v with identical or size-1-broadcast leading dims flattened the same way (sufficient for these tests).
std::vector<double> attention_reference(const Tensor& q, const Tensor& k, const Tensor& v, int64_t batch, bool causal,
                                        double scale) {
  Flat fq = flat(q), fk = flat(k), fv = flat(v);
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(fq.d));
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < fq.t; ++i) {
      std::vector<double> p(fk.t, 0.0);
      double max = -std::numeric_limits<double>::infinity(), total = 0;
      for (int64_t j = 0; j < fk.t; ++j) {
        if (causal && j > i) continue;
        for (int64_t e = 0; e < fq.d; ++e) p[j] += fq.at(b, i, e) * fk.at(b, j, e) * scale;
        max = std::max(max, p[j]);
      }
      for (int64_t j = 0; j < fk.t; ++j) {
        p[j] = causal && j > i ? 0.0 : std::exp(p[j] - max);
        total += p[j];
      }
      for (int64_t e = 0; e < fv.d; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < fk.t; ++j) acc += p[j] / total * fv.at(b, j, e);
        out.push_back(acc);
      }
    }
  }
  return out;
}

TEST(NnAttention, MatchesReference) {
  Tensor q = random_tensor({2, 3, 4}, DType::Float64, 1, -2, 2);
  Tensor k = random_tensor({2, 5, 4}, DType::Float64, 2, -2, 2);
  Tensor v = random_tensor({2, 5, 6}, DType::Float64, 3);
  Tensor out = scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 6}));
  EXPECT_TRUE(all_close(out, attention_reference(q, k, v, 2, false, 0), 1e-12, 1e-12));
  EXPECT_TRUE(all_close(scaled_dot_product_attention(q, k, v, false, 0.7), attention_reference(q, k, v, 2, false, 0.7),
                        1e-12, 1e-12));
}

TEST(NnAttention, CausalMaskIsTopLeftAligned) {
  for (auto [tq, tk] : {std::pair<int64_t, int64_t>{3, 5}, {5, 3}, {4, 4}}) {
    Tensor q = random_tensor({2, tq, 4}, DType::Float64, 4);
    Tensor k = random_tensor({2, tk, 4}, DType::Float64, 5);
    Tensor v = random_tensor({2, tk, 3}, DType::Float64, 6);
    EXPECT_TRUE(
        all_close(scaled_dot_product_attention(q, k, v, true), attention_reference(q, k, v, 2, true, 0), 1e-12, 1e-12))
        << tq << "x" << tk;
  }
  // Query 0 sees only key 0, so its output is exactly v[0].
  Tensor q = random_tensor({1, 2, 3}, DType::Float64, 7);
  Tensor v = random_tensor({1, 2, 3}, DType::Float64, 8);
  Tensor out = scaled_dot_product_attention(q, q, v, true);
  EXPECT_TRUE(all_close(out.select(1, 0), v.select(1, 0)));
}

TEST(NnAttention, BroadcastBatchAndStridedInputs) {
  // q [2, 3, T, D] against one shared k/v head [1, 1, T, D] (multi-query attention).
  Tensor q = non_contiguous(random_tensor({2, 3, 4, 5}, DType::Float64, 9));
  Tensor k = non_contiguous(random_tensor({1, 1, 6, 5}, DType::Float64, 10));
  Tensor v = random_tensor({1, 1, 6, 2}, DType::Float64, 11);
  ASSERT_FALSE(q.is_contiguous());
  Tensor out = scaled_dot_product_attention(q, k, v, true);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4, 2}));
  EXPECT_TRUE(all_close(out, attention_reference(q, k, v, 6, true, 0), 1e-12, 1e-12));
}

TEST(NnAttention, Float32) {
  Tensor q = random_tensor({2, 8, 16}, DType::Float32, 12);
  Tensor k = random_tensor({2, 8, 16}, DType::Float32, 13);
  Tensor v = random_tensor({2, 8, 16}, DType::Float32, 14);
  EXPECT_TRUE(
      all_close(scaled_dot_product_attention(q, k, v, true), attention_reference(q, k, v, 2, true, 0), 1e-4, 1e-5));
}

TEST(NnAttention, VjpMatchesFiniteDifferences) {
  Tensor q = random_tensor({2, 3, 4}, DType::Float64, 15);
  Tensor k = random_tensor({2, 5, 4}, DType::Float64, 16);
  Tensor v = random_tensor({2, 5, 2}, DType::Float64, 17);
  EXPECT_TRUE(check_vjp("scaled_dot_product_attention", {q, k, v}));
  EXPECT_TRUE(check_vjp("scaled_dot_product_attention", {q, k, v}, {{"causal", true}, {"scale", 0.5}}));
  Tensor kb = random_tensor({1, 5, 4}, DType::Float64, 18);
  Tensor vb = non_contiguous(random_tensor({1, 5, 3}, DType::Float64, 19));
  EXPECT_TRUE(check_vjp("scaled_dot_product_attention", {q, kb, vb}, {{"causal", true}}));
}

// The backward op (the fused kernel in float32 and float64) against the same gradients from the
// forward's own VJP formula written with ops, in float64 with 3 query blocks of the kernel and a
// causal limit inside each.
std::vector<Tensor> composed_gradients(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& g, bool causal,
                                       double scale) {
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    Tensor keys = arange(static_cast<double>(k.size(-2))).reshape({1, k.size(-2)});
    Tensor queries = arange(static_cast<double>(q.size(-2))).reshape({q.size(-2), 1});
    scores = where(le(keys, queries), scores, full({}, -std::numeric_limits<double>::infinity(), scores.dtype()));
  }
  Tensor p = softmax(scores, -1);
  Tensor dp = matmul(g, v.transpose(-2, -1));
  Tensor ds = p * (dp - sum(dp * p, {-1}, true)) * scale;
  return {matmul(ds, k), matmul(ds.transpose(-2, -1), q), matmul(p.transpose(-2, -1), g)};
}

TEST(NnAttention, FusedBackwardMatchesTheComposedGradients) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    Tensor q = random_tensor({2, 150, 8}, dtype, 20);
    Tensor k = random_tensor({2, 150, 8}, dtype, 21);
    Tensor v = random_tensor({2, 150, 5}, dtype, 22);
    Tensor g = random_tensor({2, 150, 5}, dtype, 23);
    for (bool causal : {false, true}) {
      std::vector<Tensor> fused =
          call("scaled_dot_product_attention_backward", {q, k, v, g}, {{"causal", causal}, {"scale", 0.4}});
      std::vector<Tensor> composed = composed_gradients(q, k, v, g, causal, 0.4);
      const double tolerance = dtype == DType::Float64 ? 1e-12 : 1e-4;
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(all_close(fused[i], composed[i], tolerance, tolerance)) << "gradient " << i << " causal " << causal;
      }
    }
  }
}

// first_query: a block of queries numbered from there (what a rank holding that block of a
// query-split causal call computes) gives the same rows, and the same gradients for them, as the
// whole call; fused (f32, f64) and composed (bf16) alike.
TEST(NnAttention, FirstQueryComputesThatBlockOfTheWholeCall) {
  for (DType dtype : {DType::Float64, DType::Float32, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor q = random_tensor({2, 150, 8}, DType::Float64, 30).to(dtype);
    Tensor k = random_tensor({2, 150, 8}, DType::Float64, 31).to(dtype);
    Tensor v = random_tensor({2, 150, 5}, DType::Float64, 32).to(dtype);
    Tensor g = random_tensor({2, 150, 5}, DType::Float64, 33).to(dtype);
    const double tolerance = dtype == DType::Float64 ? 1e-12 : dtype == DType::Float32 ? 1e-5 : 0.05;
    Tensor whole = call("scaled_dot_product_attention", {q, k, v}, {{"causal", true}})[0];
    std::vector<Tensor> whole_grads = call("scaled_dot_product_attention_backward", {q, k, v, g}, {{"causal", true}});
    for (int64_t first : {0, 37, 70}) {
      const int64_t rows = 150 - first < 50 ? 150 - first : 50;
      Tensor block_q = q.narrow(1, first, rows).contiguous();
      Tensor block_g = g.narrow(1, first, rows).contiguous();
      const Attrs attrs{{"causal", true}, {"first_query", int64_t{first}}};
      Tensor block = call("scaled_dot_product_attention", {block_q, k, v}, attrs)[0];
      EXPECT_TRUE(
          all_close(block.to(DType::Float64), whole.narrow(1, first, rows).to(DType::Float64), tolerance, tolerance))
          << "first " << first;
      // The block's own gradients: dq of its rows; dk and dv its share (the other blocks add theirs).
      std::vector<Tensor> grads = call("scaled_dot_product_attention_backward", {block_q, k, v, block_g}, attrs);
      EXPECT_TRUE(all_close(grads[0].to(DType::Float64), whole_grads[0].narrow(1, first, rows).to(DType::Float64),
                            tolerance, tolerance))
          << "first " << first;
    }
  }
  const std::string message = thrown_message<ValueError>([] {
    call("scaled_dot_product_attention", {Tensor::meta({1, 2, 4}), Tensor::meta({1, 2, 4}), Tensor::meta({1, 2, 4})},
         {{"causal", true}, {"first_query", int64_t{-1}}});
  });
  EXPECT_TRUE(mentions(message, {"scaled_dot_product_attention", "first_query", "-1"})) << message;
}

TEST(NnAttention, BackwardInBf16ComposesAndIsNotDifferentiable) {
  Tensor q = random_tensor({2, 6, 4}, DType::Float64, 24);
  Tensor k = random_tensor({2, 6, 4}, DType::Float64, 25);
  Tensor v = random_tensor({2, 6, 4}, DType::Float64, 26);
  Tensor g = random_tensor({2, 6, 4}, DType::Float64, 27);
  std::vector<Tensor> exact = call("scaled_dot_product_attention_backward", {q, k, v, g}, {{"causal", true}});
  std::vector<Tensor> bf16 = call(
      "scaled_dot_product_attention_backward",
      {q.to(DType::BFloat16), k.to(DType::BFloat16), v.to(DType::BFloat16), g.to(DType::BFloat16)}, {{"causal", true}});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(bf16[i].dtype(), DType::BFloat16);
    EXPECT_TRUE(all_close(bf16[i].to(DType::Float64), exact[i], 0.05, 0.05)) << "gradient " << i;
  }
  const std::string message = thrown_message<ShapeError>([&] {
    call("scaled_dot_product_attention_backward", {q, k, v, q.narrow(-1, 0, 3)});
  });
  EXPECT_TRUE(mentions(message, {"scaled_dot_product_attention_backward", "grad f64[2,6,3]", "f64[2,6,4]"})) << message;
  EXPECT_FALSE(builtin_registry().get("scaled_dot_product_attention_backward").vjp);
}

TEST(NnAttention, CostCountsBothGemms) {
  const OpDef& def = builtin_registry().get("scaled_dot_product_attention");
  std::vector<TensorMeta> in{
      {{8, 16, 128, 64}, DType::Float32}, {{8, 16, 256, 64}, DType::Float32}, {{8, 16, 256, 64}, DType::Float32}};
  Attrs attrs = check_call(def, {Tensor::meta(in[0].shape), Tensor::meta(in[1].shape), Tensor::meta(in[2].shape)}, {});
  OpCost cost = def.cost(in, def.infer(in, attrs), attrs);
  double gemm_flops = 4.0 * 8 * 16 * 128 * 256 * 64;
  EXPECT_GE(cost.flops, gemm_flops);
  EXPECT_LT(cost.flops, 1.1 * gemm_flops);
  EXPECT_EQ(cost.bytes_read, static_cast<double>(in[0].nbytes() + in[1].nbytes() + in[2].nbytes()));
}

TEST(NnAttention, BadShapesRaiseNamedErrors) {
  const char* op = "scaled_dot_product_attention";
  std::string message = thrown_message<ShapeError>([] {
    scaled_dot_product_attention(Tensor::meta({2, 3, 4}), Tensor::meta({2, 5, 8}), Tensor::meta({2, 5, 8}));
  });
  EXPECT_TRUE(mentions(message, {op, "q f32[2,3,4]", "k f32[2,5,8]", "head dim"}));
  message = thrown_message<ShapeError>([] {
    scaled_dot_product_attention(Tensor::meta({2, 3, 4}), Tensor::meta({2, 5, 4}), Tensor::meta({2, 6, 4}));
  });
  EXPECT_TRUE(mentions(message, {op, "v f32[2,6,4]", "key length"}));
  message = thrown_message<ShapeError>([] {
    scaled_dot_product_attention(Tensor::meta({2, 3, 4}), Tensor::meta({3, 5, 4}), Tensor::meta({3, 5, 4}));
  });
  EXPECT_TRUE(mentions(message, {op, "batch dims", "q f32[2,3,4]", "k f32[3,5,4]"}));
  message = thrown_message<ShapeError>([] {
    scaled_dot_product_attention(Tensor::meta({4}), Tensor::meta({5, 4}), Tensor::meta({5, 4}));
  });
  EXPECT_TRUE(mentions(message, {op, "q f32[4]"}));
  message = thrown_message<DTypeError>([] {
    scaled_dot_product_attention(Tensor::meta({3, 4}), Tensor::meta({5, 4}, DType::Float64), Tensor::meta({5, 4}));
  });
  EXPECT_TRUE(mentions(message, {op, "f64[5,4]"}));
}

TEST(NnAttention, InferredMetaMatchesKernelAndMetaAllocatesNothing) {
  Tensor q = random_tensor({2, 3, 4}, DType::Float32, 20);
  Tensor k = random_tensor({1, 5, 4}, DType::Float32, 21);
  Tensor v = random_tensor({2, 5, 7}, DType::Float32, 22);
  const OpDef& def = builtin_registry().get("scaled_dot_product_attention");
  EXPECT_EQ(infer_metas(def, {q.meta_info(), k.meta_info(), v.meta_info()}, {})[0],
            call(def, {q, k, v})[0].meta_info());
  Tensor big = Tensor::meta({64, 32, 8192, 128}, DType::BFloat16);
  Tensor out = scaled_dot_product_attention(big, big, big, true);
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(out.meta_info(), big.meta_info());
}

}  // namespace
}  // namespace px

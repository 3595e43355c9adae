#include "parallax/runtime/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "parallax/nn/layers.h"
#include "support/test_util.h"

namespace px::runtime {
namespace {

using px::testing::all_close;
using px::testing::error_message;
using px::testing::random_tensor;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// --- independent reference math, in double, on flat vectors ---

struct SgdReference {
  explicit SgdReference(SgdOptions options) : o(options) {}
  SgdOptions o;
  std::vector<double> buf;
  bool started = false;

  void step(std::vector<double>& p, const std::vector<double>& g) {
    if (buf.empty()) buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + o.weight_decay * p[i];
      if (o.momentum != 0) {
        buf[i] = started ? o.momentum * buf[i] + (1 - o.dampening) * d : d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      p[i] -= o.lr * d;
    }
    started = true;
  }
};

// Textbook AdamW (Loshchilov & Hutter) with bias-corrected moments.
struct AdamWReference {
  explicit AdamWReference(AdamWOptions options = {}) : o(options) {}
  AdamWOptions o;
  std::vector<double> m, v;
  int t = 0;

  void step(std::vector<double>& p, const std::vector<double>& g) {
    if (m.empty()) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - o.lr * o.weight_decay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
      double m_hat = m[i] / (1 - std::pow(o.beta1, t));
      double v_hat = v[i] / (1 - std::pow(o.beta2, t));
      p[i] -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
  }
};

double tolerance(DType dtype) { return dtype == DType::Float64 ? 1e-12 : 2e-5; }

// --- hand-computed values ---

TEST(Sgd, HandComputedMomentumAndNesterov) {
  Tensor p = Tensor::from_vector({1.0}, {1}, DType::Float64);
  Sgd sgd({p}, {.lr = 0.1, .momentum = 0.9});
  Tensor g = Tensor::from_vector({0.5}, {1}, DType::Float64);
  sgd.step({g});
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.95);  // buf = 0.5
  sgd.step({g});
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.855);  // buf = 0.9 * 0.5 + 0.5 = 0.95
  EXPECT_DOUBLE_EQ(sgd.momentum_buffer(0).item<double>(), 0.95);

  Tensor q = Tensor::from_vector({1.0}, {1}, DType::Float64);
  Sgd nesterov({q}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  nesterov.step({g});
  EXPECT_DOUBLE_EQ(q.item<double>(), 0.905);  // d = 0.5 + 0.9 * 0.5
  nesterov.step({g});
  EXPECT_DOUBLE_EQ(q.item<double>(), 0.905 - 0.1 * (0.5 + 0.9 * 0.95));
}

TEST(AdamW, HandComputedFirstStep) {
  // Step 1: the bias-corrected moments are g and g^2, so the update is lr * g / (|g| + eps).
  Tensor p = Tensor::from_vector({1.0, -2.0}, {2}, DType::Float64);
  AdamW adam({p}, {.lr = 0.1, .weight_decay = 0.01});
  adam.step({Tensor::from_vector({0.5, -4.0}, {2}, DType::Float64)});
  std::vector<double> got = values(p);
  EXPECT_NEAR(got[0], 0.999 - 0.1 * 0.5 / (0.5 + 1e-8), 1e-15);
  EXPECT_NEAR(got[1], -2.0 * 0.999 + 0.1 * 4.0 / (4.0 + 1e-8), 1e-15);
  EXPECT_EQ(adam.step_count(0), 1);
}

// --- against the references over several steps ---

struct SgdCase {
  std::string name;
  SgdOptions options;
};

class SgdMatchesReference : public ::testing::TestWithParam<std::tuple<SgdCase, DType>> {};

TEST_P(SgdMatchesReference, FourSteps) {
  const auto& [c, dtype] = GetParam();
  Tensor p1 = random_tensor({3, 5}, dtype, 1);
  Tensor p2 = random_tensor({7}, dtype, 2);
  std::vector<double> r1 = values(p1), r2 = values(p2);
  SgdReference ref1{c.options}, ref2{c.options};
  Sgd sgd({p1, p2}, c.options);
  for (uint64_t s = 0; s < 4; ++s) {
    Tensor g1 = random_tensor({3, 5}, dtype, 100 + s);
    Tensor g2 = random_tensor({7}, dtype, 200 + s);
    sgd.step({g1, g2});
    ref1.step(r1, values(g1));
    ref2.step(r2, values(g2));
    ASSERT_TRUE(all_close(p1, r1, tolerance(dtype), tolerance(dtype))) << "step " << s;
    ASSERT_TRUE(all_close(p2, r2, tolerance(dtype), tolerance(dtype))) << "step " << s;
  }
  if (c.options.momentum != 0) {
    EXPECT_TRUE(all_close(sgd.momentum_buffer(0), ref1.buf, tolerance(dtype), tolerance(dtype)));
    EXPECT_EQ(sgd.state_bytes(), (15 + 7) * dtype_size(dtype));
  } else {
    EXPECT_EQ(sgd.state_bytes(), 0);
    EXPECT_FALSE(sgd.momentum_buffer(0).defined());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, SgdMatchesReference,
    ::testing::Combine(
        ::testing::Values(SgdCase{"plain", {.lr = 0.1}}, SgdCase{"momentum", {.lr = 0.05, .momentum = 0.9}},
                          SgdCase{"dampening", {.lr = 0.05, .momentum = 0.8, .dampening = 0.3}},
                          SgdCase{"nesterov", {.lr = 0.05, .momentum = 0.9, .nesterov = true}},
                          SgdCase{"weight_decay", {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1, .nesterov = true}},
                          SgdCase{"decay_only", {.lr = 0.2, .weight_decay = 0.5}}),
        ::testing::Values(DType::Float32, DType::Float64)),
    [](const auto& info) {
      return std::get<0>(info.param).name + "_" + std::string(dtype_name(std::get<1>(info.param)));
    });

class AdamWMatchesReference : public ::testing::TestWithParam<DType> {};

TEST_P(AdamWMatchesReference, BiasCorrectionOverFiveSteps) {
  DType dtype = GetParam();
  AdamWOptions options{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.1};
  Tensor p1 = random_tensor({4, 3}, dtype, 3);
  Tensor p2 = random_tensor({}, dtype, 4);
  std::vector<double> r1 = values(p1), r2 = values(p2);
  AdamWReference ref1{options}, ref2{options};
  AdamW adam({p1, p2}, options);
  EXPECT_EQ(adam.state_bytes(), 2 * 13 * dtype_size(dtype));
  for (uint64_t s = 0; s < 5; ++s) {
    Tensor g1 = random_tensor({4, 3}, dtype, 300 + s);
    Tensor g2 = random_tensor({}, dtype, 400 + s, 0.5, 2.0);
    adam.step({g1, g2});
    ref1.step(r1, values(g1));
    ref2.step(r2, values(g2));
    ASSERT_TRUE(all_close(p1, r1, tolerance(dtype), tolerance(dtype))) << "step " << s;
    ASSERT_TRUE(all_close(p2, r2, tolerance(dtype), tolerance(dtype))) << "step " << s;
  }
  EXPECT_TRUE(all_close(adam.exp_avg(0), ref1.m, tolerance(dtype), tolerance(dtype)));
  EXPECT_TRUE(all_close(adam.exp_avg_sq(0), ref1.v, tolerance(dtype), tolerance(dtype)));
  EXPECT_EQ(adam.step_count(1), 5);
}

TEST_P(AdamWMatchesReference, DefaultOptions) {
  DType dtype = GetParam();
  Tensor p = random_tensor({6}, dtype, 5);
  std::vector<double> r = values(p);
  AdamWReference ref;
  AdamW adam({p});
  for (uint64_t s = 0; s < 3; ++s) {
    Tensor g = random_tensor({6}, dtype, 500 + s);
    adam.step({g});
    ref.step(r, values(g));
  }
  EXPECT_TRUE(all_close(p, r, tolerance(dtype), tolerance(dtype)));
}

INSTANTIATE_TEST_SUITE_P(Runtime, AdamWMatchesReference, ::testing::Values(DType::Float32, DType::Float64),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// --- shards, views, in-place visibility ---

TEST(Optimizer, ShardsUpdateLikeTheWhole) {
  Tensor whole = random_tensor({6, 4}, DType::Float64, 6);
  Tensor shard0 = whole.slice(0, 0, 3).clone();
  Tensor shard1 = whole.slice(0, 3, 6).clone();
  AdamW full({whole});
  AdamW local0({shard0});
  AdamW local1({shard1});
  for (uint64_t s = 0; s < 3; ++s) {
    Tensor g = random_tensor({6, 4}, DType::Float64, 600 + s);
    full.step({g});
    local0.step({g.slice(0, 0, 3)});  // a non-contiguous-offset view as the gradient
    local1.step({g.slice(0, 3, 6)});
  }
  EXPECT_TRUE(all_close(shard0, whole.slice(0, 0, 3), 0, 0));
  EXPECT_TRUE(all_close(shard1, whole.slice(0, 3, 6), 0, 0));
}

TEST(Optimizer, UpdatesAreSeenThroughEveryHandle) {
  nn::Linear linear(4, 3, true, DType::Float64);
  linear.materialize(1);
  Tensor weight = linear.weight();  // another handle to the slot's tensor
  Tensor view = weight.transpose(0, 1);
  std::vector<double> before = values(weight);
  Sgd sgd({linear.weight(), linear.bias()}, {.lr = 0.5});
  Tensor gw = Tensor::from_vector(std::vector<double>(12, 1.0), {3, 4}, DType::Float64);
  Tensor gb = Tensor::from_vector({1.0, 2.0, 3.0}, {3}, DType::Float64);
  sgd.step({gw, gb});
  for (double& b : before) b -= 0.5;
  EXPECT_TRUE(all_close(linear.weight(), before, 1e-15, 0));
  EXPECT_TRUE(all_close(weight, before, 1e-15, 0));
  EXPECT_TRUE(all_close(view.transpose(0, 1), before, 1e-15, 0));
  EXPECT_TRUE(all_close(linear.bias(), {-0.5, -1.0, -1.5}, 0, 0));
}

TEST(Optimizer, NonContiguousParameterWritesThroughToItsBase) {
  Tensor base = random_tensor({4, 5}, DType::Float32, 7);
  Tensor param = base.transpose(0, 1);  // [5, 4], strided
  Tensor copy = param.contiguous().clone();
  Tensor g = random_tensor({5, 4}, DType::Float32, 8);
  AdamW strided({param}, {.lr = 0.1});
  AdamW dense({copy}, {.lr = 0.1});
  strided.step({g});
  dense.step({px::testing::non_contiguous(g)});
  EXPECT_TRUE(all_close(base.transpose(0, 1), copy, 0, 0));
}

TEST(Optimizer, BFloat16ComputesInFloatAndRoundsBack) {
  Tensor p = random_tensor({8}, DType::BFloat16, 9);
  Tensor g = random_tensor({8}, DType::BFloat16, 10);
  std::vector<float> pv = p.to_vector<float>(), gv = g.to_vector<float>();
  Sgd sgd({p}, {.lr = 0.25, .momentum = 0.5});
  sgd.step({g});
  EXPECT_EQ(sgd.momentum_buffer(0).dtype(), DType::Float32);
  EXPECT_EQ(sgd.state_bytes(), 8 * 4);
  std::vector<float> got = p.to_vector<float>();
  for (size_t i = 0; i < pv.size(); ++i) {
    EXPECT_EQ(got[i], static_cast<float>(BFloat16(pv[i] + -0.25f * gv[i])));
  }
  AdamW adam({p});
  EXPECT_EQ(adam.exp_avg(0).dtype(), DType::Float32);
  adam.step({g});
  EXPECT_EQ(p.dtype(), DType::BFloat16);
}

TEST(Optimizer, UndefinedGradientsSkipTheirParameter) {
  Tensor a = random_tensor({3}, DType::Float64, 11);
  Tensor b = random_tensor({3}, DType::Float64, 12);
  std::vector<double> b_before = values(b);
  AdamW adam({a, b});
  adam.step({random_tensor({3}, DType::Float64, 13), Tensor()});
  EXPECT_EQ(adam.step_count(0), 1);
  EXPECT_EQ(adam.step_count(1), 0);
  EXPECT_TRUE(all_close(b, b_before, 0, 0));
}

TEST(Optimizer, LearningRateCanChange) {
  Tensor p = Tensor::from_vector({1.0}, {1}, DType::Float64);
  Sgd sgd({p}, {.lr = 0.1});
  sgd.set_lr(0.5);
  EXPECT_EQ(sgd.lr(), 0.5);
  sgd.step({Tensor::from_vector({1.0}, {1}, DType::Float64)});
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.5);
  EXPECT_EQ(error_message([&] { sgd.set_lr(-1); }), "ValueError: SGD.set_lr: invalid learning rate -1.000000");
}

// --- errors ---

TEST(Optimizer, GradientErrorsNameTheIndexAndChangeNothing) {
  Tensor a = random_tensor({2, 3}, DType::Float32, 14);
  Tensor b = random_tensor({3}, DType::Float32, 15);
  std::vector<double> a_before = values(a);
  Sgd sgd({a, b}, {.lr = 0.1});
  Tensor ga = random_tensor({2, 3}, DType::Float32, 16);
  EXPECT_EQ(error_message([&] { sgd.step({ga}); }), "ValueError: SGD.step: got 1 gradients for 2 parameters");
  EXPECT_EQ(error_message([&] {
              sgd.step({ga, random_tensor({2, 3}, DType::Float32)});
            }),
            "ValueError: SGD.step: gradient 1 is f32[2,3] but its parameter is f32[3]");
  AdamW adam({a, b});
  EXPECT_EQ(error_message([&] {
              adam.step({ga, random_tensor({3}, DType::Float64)});
            }),
            "ValueError: AdamW.step: gradient 1 is f64[3] but its parameter is f32[3]");
  EXPECT_EQ(error_message([&] {
              adam.step({Tensor::meta({2, 3}), Tensor()});
            }),
            "ValueError: AdamW.step: gradient 0 f32[2,3] is not a dense tensor");
  EXPECT_TRUE(all_close(a, a_before, 0, 0));
  EXPECT_EQ(adam.step_count(0), 0);
}

TEST(Optimizer, ParameterAndOptionErrors) {
  Tensor p = random_tensor({3}, DType::Float32, 17);
  EXPECT_EQ(error_message([&] { Sgd({p, Tensor()}); }), "ValueError: SGD: parameter 1 is undefined");
  EXPECT_EQ(error_message([&] { Sgd({Tensor::meta({3})}); }),
            "ValueError: SGD: parameter 0 f32[3] is not a dense tensor");
  EXPECT_EQ(error_message([&] { AdamW({Tensor::zeros({3}, DType::Int64)}); }),
            "ValueError: AdamW: parameter 0 i64[3] is not floating point");
  EXPECT_EQ(error_message([&] {
              AdamW({p, p});
            }),
            "ValueError: AdamW: parameter 1 is parameter 0 again; each would be updated twice");
  EXPECT_EQ(error_message([&] {
              Sgd({p.unsqueeze(0).expand({4, 3})});
            }),
            "ValueError: SGD: parameter 0 f32[4,3] has a stride-0 dim (an expanded view), so an in-place update "
            "would write an element twice");
  EXPECT_EQ(error_message([&] { Sgd({p}, {.lr = -0.1}); }),
            "ValueError: SGD: invalid learning rate -0.100000 (must be >= 0)");
  EXPECT_EQ(error_message([&] { Sgd({p}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); }),
            "ValueError: SGD: Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(error_message([&] { Sgd({p}, {.nesterov = true}); }),
            "ValueError: SGD: Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(error_message([&] { AdamW({p}, {.beta2 = 1.0}); }),
            "ValueError: AdamW: invalid beta2 1.000000 (must be in [0, 1))");
  EXPECT_EQ(error_message([&] { AdamW({p}, {.eps = -1}); }),
            "ValueError: AdamW: invalid epsilon value -1.000000 (must be >= 0)");
  // Distinct shards of one storage are distinct parameters.
  Tensor flat = random_tensor({6}, DType::Float32, 18);
  EXPECT_NO_THROW(Sgd({flat.slice(0, 0, 3), flat.slice(0, 3, 6)}));
}

// --- clipping ---

double sum_of_squares(const Tensor& t) {
  double total = 0;
  for (double x : values(t)) total += x * x;
  return total;
}

TEST(ClipGradNorm, MatchesTorchFormulaOnOneDevice) {
  Tensor a = random_tensor({4, 5}, DType::Float64, 20);
  Tensor b = random_tensor({3}, DType::Float64, 21);
  std::vector<double> a_before = values(a), b_before = values(b);
  double expected_total = std::sqrt(sum_of_squares(a) + sum_of_squares(b));
  double total = clip_grad_norm({a, b}, 0.5);
  EXPECT_NEAR(total, expected_total, 1e-14);
  double coef = 0.5 / (expected_total + 1e-6);
  for (double& x : a_before) x *= coef;
  for (double& x : b_before) x *= coef;
  EXPECT_TRUE(all_close(a, a_before, 1e-14, 0));
  EXPECT_TRUE(all_close(b, b_before, 1e-14, 0));
  EXPECT_NEAR(std::sqrt(sum_of_squares(a) + sum_of_squares(b)), 0.5, 1e-5);
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  Tensor a = random_tensor({4}, DType::Float32, 22);
  std::vector<double> before = values(a);
  double total = clip_grad_norm({a}, 100.0);
  EXPECT_GT(total, 0);
  EXPECT_TRUE(all_close(a, before, 0, 0));
}

TEST(ClipGradNorm, FloatAndStridedGradients) {
  Tensor base = random_tensor({5, 4}, DType::Float32, 23);
  Tensor g = base.transpose(0, 1);
  std::vector<double> before = values(g);
  double total = clip_grad_norm({g}, 0.1);
  EXPECT_NEAR(total, std::sqrt(sum_of_squares(Tensor::from_vector(before, {4, 5}, DType::Float64))), 1e-5);
  for (double& x : before) x *= 0.1 / (total + 1e-6);
  EXPECT_TRUE(all_close(base.transpose(0, 1), before, 1e-6, 1e-7));
}

TEST(ClipGradNorm, ShardedAcrossTwoRanksMatchesTheWhole) {
  // The whole: a [6,4] gradient and a [5] gradient.
  Tensor sharded = random_tensor({6, 4}, DType::Float64, 24);
  Tensor replicated = random_tensor({5}, DType::Float64, 25);
  // Two ranks: each holds half the rows of the first and all of the second (weight 1/2).
  std::vector<std::vector<Tensor>> ranks = {{sharded.slice(0, 0, 3).clone(), replicated.clone()},
                                            {sharded.slice(0, 3, 6).clone(), replicated.clone()}};
  const std::vector<double> weights = {1.0, 0.5};
  // Gather each rank's local sum (an all_reduce does this on a real world).
  std::vector<double> locals(2);
  for (size_t r = 0; r < 2; ++r) {
    clip_grad_norm(ranks[r], 1e300, weights, [&](double local) {
      locals[r] = local;
      return local;
    });
  }
  auto all_reduce = [&](double) { return locals[0] + locals[1]; };
  double total0 = clip_grad_norm(ranks[0], 1.0, weights, all_reduce);
  double total1 = clip_grad_norm(ranks[1], 1.0, weights, all_reduce);
  double whole_total = clip_grad_norm({sharded, replicated}, 1.0);
  EXPECT_NEAR(total0, whole_total, 1e-13);
  EXPECT_EQ(total0, total1);
  EXPECT_TRUE(all_close(ranks[0][0], sharded.slice(0, 0, 3), 1e-15, 0));
  EXPECT_TRUE(all_close(ranks[1][0], sharded.slice(0, 3, 6), 1e-15, 0));
  EXPECT_TRUE(all_close(ranks[0][1], replicated, 1e-15, 0));
  EXPECT_TRUE(all_close(ranks[1][1], replicated, 1e-15, 0));
}

TEST(ClipGradNorm, Errors) {
  Tensor a = random_tensor({3}, DType::Float32, 26);
  EXPECT_EQ(error_message([&] {
              clip_grad_norm({a}, 1.0, {1.0, 1.0});
            }),
            "ValueError: clip_grad_norm: got 2 weights for 1 gradients");
  EXPECT_EQ(error_message([&] { clip_grad_norm({a}, -1.0); }),
            "ValueError: clip_grad_norm: max_norm -1.000000 must be >= 0");
  EXPECT_EQ(error_message([&] { clip_grad_norm({a}, 1.0, {-0.5}); }),
            "ValueError: clip_grad_norm: weight 0 is -0.500000; weights must be finite and >= 0");
  EXPECT_EQ(error_message([&] {
              clip_grad_norm({a, Tensor::meta({2})}, 1.0);
            }),
            "ValueError: clip_grad_norm: gradient 1 f32[2] is not a dense tensor");
  EXPECT_EQ(error_message([&] { clip_grad_norm({Tensor::zeros({2}, DType::Int64)}, 1.0); }),
            "ValueError: clip_grad_norm: gradient 0 i64[2] is not floating point");
  EXPECT_EQ(error_message([&] {
              clip_grad_norm({a.unsqueeze(0).expand({2, 3})}, 1.0);
            }),
            "ValueError: clip_grad_norm: gradient 0 f32[2,3] has a stride-0 dim (an expanded view) and cannot be "
            "scaled in place");
  EXPECT_EQ(clip_grad_norm({Tensor()}, 1.0), 0.0);
}

}  // namespace
}  // namespace px::runtime

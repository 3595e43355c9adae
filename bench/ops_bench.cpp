// Op throughput against the hardware's own ceilings, measured in one run:
//   - matmul through the op (dispatcher + kernel) vs cblas_sgemm called directly, 1 BLAS thread;
//   - memory-bound ops (add, gelu, softmax, layer_norm) on 16 MiB float32 tensors vs memcpy,
//     add, gelu and contiguous() also on a transposed (strided) operand; mean and sum
//     over rows and over the first dim (bytes moved: the input read);
//   - fused causal attention forward + backward at GPT shapes, in GFLOP/s of its GEMMs.
// Bytes moved = bytes read + bytes written, for the ops and for memcpy alike.
// Run: build/bench/ops_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//        --benchmark_report_aggregates_only=true   (interleaving: see docs/benchmarks.md, run 3)

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/kernels/blas_threads.h"
#include "parallax/ops/dispatch.h"

namespace {

constexpr int64_t kBytes16MiB = 16 << 20;
constexpr int64_t kFloats16MiB = kBytes16MiB / 4;

px::Tensor filled(const px::Shape& shape, float value) {
  px::Tensor t = px::Tensor::empty(shape, px::DType::Float32);
  float* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = value + 1e-3f * static_cast<float>(i % 97);
  return t;
}

void set_gemm_counters(benchmark::State& state, int64_t m, int64_t n, int64_t k) {
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(m * n * k), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_matmul_op(benchmark::State& state) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  px::kernels::set_blas_threads(1);
  px::Tensor a = filled({m, k}, 0.5f), b = filled({k, n}, 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("matmul", {a, b}));
  set_gemm_counters(state, m, n, k);
}

void BM_cblas_sgemm(benchmark::State& state) {
  int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  px::kernels::set_blas_threads(1);
  px::Tensor a = filled({m, k}, 0.5f), b = filled({k, n}, 0.25f);
  for (auto _ : state) {
    // Allocate the output each time, as the op does, so the comparison is like for like.
    px::Tensor c = px::Tensor::empty({m, n}, px::DType::Float32);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, a.data<float>(), static_cast<int>(k), b.data<float>(), static_cast<int>(n),
                0.0f, c.data<float>(), static_cast<int>(n));
    benchmark::DoNotOptimize(c.data<float>());
  }
  set_gemm_counters(state, m, n, k);
}

void gemm_sizes(benchmark::internal::Benchmark* bench) {
  bench->Args({512, 512, 512})->Args({1024, 1024, 1024})->Args({4096, 1024, 1024});
  bench->ArgNames({"m", "k", "n"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_matmul_op)->Apply(gemm_sizes);
BENCHMARK(BM_cblas_sgemm)->Apply(gemm_sizes);

void BM_memcpy(benchmark::State& state) {
  std::vector<float> src(kFloats16MiB, 1.0f), dst(kFloats16MiB, 0.0f);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBytes16MiB);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_memcpy)->UseRealTime();

void BM_add(benchmark::State& state) {
  px::Tensor a = filled({kFloats16MiB}, 1.0f), b = filled({kFloats16MiB}, 2.0f);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("add", {a, b}));
  state.SetBytesProcessed(state.iterations() * 3 * kBytes16MiB);
}
BENCHMARK(BM_add)->UseRealTime();

void BM_gelu(benchmark::State& state) {
  px::Tensor x = filled({kFloats16MiB}, -0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("gelu", {x}));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_gelu)->UseRealTime();

void BM_gelu_tanh(benchmark::State& state) {
  px::Tensor x = filled({kFloats16MiB}, -0.5f);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("gelu", {x}, {{"approximate", std::string("tanh")}}));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_gelu_tanh)->UseRealTime();

// Strided operands: the second input (or the only one) is a transposed 2048 x 2048
// view, so every row is gathered before the vectorized loop runs.
void BM_add_transposed(benchmark::State& state) {
  px::Tensor a = filled({2048, 2048}, 1.0f), b = filled({2048, 2048}, 2.0f).transpose(0, 1);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("add", {a, b}));
  state.SetBytesProcessed(state.iterations() * 3 * kBytes16MiB);
}
BENCHMARK(BM_add_transposed)->UseRealTime();

void BM_gelu_transposed(benchmark::State& state) {
  px::Tensor x = filled({2048, 2048}, -0.5f).transpose(0, 1);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("gelu", {x}));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_gelu_transposed)->UseRealTime();

void BM_contiguous_transposed(benchmark::State& state) {
  px::Tensor x = filled({2048, 2048}, 1.0f).transpose(0, 1);
  for (auto _ : state) benchmark::DoNotOptimize(x.contiguous());
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_contiguous_transposed)->UseRealTime();

// Reductions over 16 MiB: rows of 256 (a LayerNorm backward's mean over the
// model dim) and the first dim away (a bias gradient's sum over tokens).
void BM_mean_rows_of_256(benchmark::State& state) {
  px::Tensor x = filled({kFloats16MiB / 256, 256}, 0.5f);
  px::Attrs attrs{{"dims", std::vector<int64_t>{1}}, {"keepdim", true}};
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("mean", {x}, attrs));
  state.SetBytesProcessed(state.iterations() * kBytes16MiB);
}
BENCHMARK(BM_mean_rows_of_256)->UseRealTime();

void BM_sum_first_dim(benchmark::State& state) {
  px::Tensor x = filled({kFloats16MiB / 256, 256}, 0.5f);
  px::Attrs attrs{{"dims", std::vector<int64_t>{0}}, {"keepdim", false}};
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("sum", {x}, attrs));
  state.SetBytesProcessed(state.iterations() * kBytes16MiB);
}
BENCHMARK(BM_sum_first_dim)->UseRealTime();

void BM_softmax(benchmark::State& state) {
  px::Tensor x = filled({kFloats16MiB / 1024, 1024}, 0.1f);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("softmax", {x}, {{"dim", int64_t{-1}}}));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_softmax)->UseRealTime();

void BM_layer_norm(benchmark::State& state) {
  px::Tensor x = filled({kFloats16MiB / 1024, 1024}, 0.1f);
  px::Tensor w = filled({1024}, 1.0f), b = filled({1024}, 0.0f);
  for (auto _ : state) benchmark::DoNotOptimize(px::call1("layer_norm", {x, w, b}));
  state.SetBytesProcessed(state.iterations() * 2 * kBytes16MiB);
}
BENCHMARK(BM_layer_norm)->UseRealTime();

// Causal attention forward + backward on [batch 8, heads H, T, 64] float32 (the GPT shapes of
// issue 19: dim 256 = 4 heads, dim 768 = 12 heads, T 128 and 512), the fused op pair, 1 BLAS
// thread. GFLOP/s counts the GEMMs as the kernels run them (the backward recomputes the scores):
// 2·(2·64) flops per score forward and 2·(5·64) backward, over the scores a causal block computes
// (each block of 64 queries stops at its last query's key); compare with BM_cblas_sgemm.
void BM_attention(benchmark::State& state) {
  const int64_t heads = state.range(0), t = state.range(1), d = 64;
  px::kernels::set_blas_threads(1);
  const px::Shape shape{8, heads, t, d};
  px::Tensor q = filled(shape, 0.01f), k = filled(shape, 0.02f), v = filled(shape, 0.03f), g = filled(shape, 0.04f);
  const px::Attrs attrs{{"causal", true}};
  for (auto _ : state) {
    benchmark::DoNotOptimize(px::call1("scaled_dot_product_attention", {q, k, v}, attrs));
    benchmark::DoNotOptimize(px::call("scaled_dot_product_attention_backward", {q, k, v, g}, attrs));
  }
  // Scores the causal kernel computes: each block of 64 queries stops at its last query's key.
  double pairs = 0;
  for (int64_t i0 = 0; i0 < t; i0 += 64)
    pairs += static_cast<double>(std::min<int64_t>(64, t - i0) * std::min(t, i0 + 64));
  const double scores = 8.0 * static_cast<double>(heads) * pairs;
  state.counters["GFLOP/s"] =
      benchmark::Counter(scores * 2 * (2 * d) + scores * 2 * (5 * d), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}
void attention_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t heads : {4, 12}) {
    for (int64_t t : {128, 512}) b->Args({heads, t});
  }
}
BENCHMARK(BM_attention)->Apply(attention_sizes)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("openblas_core", px::kernels::blas_core_name());
  benchmark::AddCustomContext("blas_threads", "1");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

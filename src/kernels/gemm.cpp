#include "parallax/kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/core/parallel.h"
#include "parallax/kernels/blas_threads.h"

namespace px::kernels {

namespace {

// How cblas reads a matrix in place: transposed or not, and its leading dim.
struct BlasOperand {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 1;
};

// Dims of size <= 1 leave their stride free, so a vector is both row- and column-major.
std::optional<BlasOperand> blas_operand(const MatrixLayout& m) {
  int64_t row_major_min_ld = std::max<int64_t>(m.cols, 1);
  if (m.cols <= 1 || m.col_stride == 1) {
    int64_t ld = m.rows <= 1 ? row_major_min_ld : m.row_stride;
    if (ld >= row_major_min_ld) return BlasOperand{CblasNoTrans, ld};
  }
  int64_t col_major_min_ld = std::max<int64_t>(m.rows, 1);
  if (m.rows <= 1 || m.row_stride == 1) {
    int64_t ld = m.cols <= 1 ? col_major_min_ld : m.col_stride;
    if (ld >= col_major_min_ld) return BlasOperand{CblasTrans, ld};
  }
  return std::nullopt;
}

template <class From, class To>
To convert(From value) {
  if constexpr (std::is_same_v<To, BFloat16>) {
    return BFloat16(static_cast<float>(value));
  } else {
    return static_cast<To>(value);
  }
}

// Row-major contiguous copy of a strided matrix, converting From -> To.
template <class From, class To>
std::vector<To> pack(const From* data, const MatrixLayout& m) {
  std::vector<To> packed(static_cast<size_t>(m.rows * m.cols));
  for (int64_t i = 0; i < m.rows; ++i) {
    for (int64_t j = 0; j < m.cols; ++j) {
      packed[static_cast<size_t>(i * m.cols + j)] = convert<From, To>(data[i * m.row_stride + j * m.col_stride]);
    }
  }
  return packed;
}

MatrixLayout packed_layout(const MatrixLayout& m) { return {m.rows, m.cols, m.cols, 1}; }

int blas_int(int64_t value, const char* what) {
  if (value > INT_MAX) {
    throw ValueError(std::string("gemm: ") + what + " = " + std::to_string(value) +
                     " exceeds the 32-bit BLAS interface (at most " + std::to_string(INT_MAX) + ")");
  }
  return static_cast<int>(value);
}

void blas_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda, const float* b,
               int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void blas_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda, const double* b,
               int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

#ifdef PARALLAX_HAVE_SBGEMM
// OpenBLAS built with BUILD_BFLOAT16 (CMake finds cblas_sbgemm): bf16 operands read in place,
// products accumulated into float32 C.
void blas_call(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const BFloat16* a, int lda,
               const BFloat16* b, int ldb, float beta, float* c, int ldc) {
  static_assert(sizeof(BFloat16) == sizeof(bfloat16));
  cblas_sbgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, reinterpret_cast<const bfloat16*>(a), lda,
               reinterpret_cast<const bfloat16*>(b), ldb, beta, c, ldc);
}
#endif

// C = beta * C for an empty contraction (k == 0), which BLAS may skip.
template <class T>
void scale_c(T* c, int64_t m, int64_t n, int64_t ldc, T beta) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
  }
}

// A GEMM of at least kSplitMinMacs multiply-adds is computed as up to kSplitParts whole-k GEMMs
// over blocks of C's rows (or columns) of at least kSplitMinBlock, ALWAYS, with or without
// threads: OpenBLAS's Haswell kernels round differently at a block's edge (measured: splitting
// a 512 x 384 x 128 sgemm in two changes 4% of the results), so only a split that depends on
// the shape alone gives the same bits for any thread count. On one thread the split costs 1-3%
// (measured on the training step's shapes, 4 parts).
constexpr int64_t kSplitMinMacs = int64_t{1} << 22;
constexpr int64_t kSplitParts = 4;
constexpr int64_t kSplitMinBlock = 128;
constexpr int64_t kSplitAlign = 16;  // blocks are whole multiples of the kernels' register tiles

int64_t split_parts(int64_t m, int64_t n, int64_t k) {
  if (m * n * k < kSplitMinMacs) return 1;
  return std::clamp<int64_t>(std::max(m, n) / kSplitMinBlock, 1, kSplitParts);
}

// C (of Acc, the accumulation type) = A B + beta C through BLAS, operands read in place where
// their strides allow it (transposes as flags) and packed otherwise.
template <class T, class Acc = T>
void gemm_native(const T* a, const MatrixLayout& la, const T* b, const MatrixLayout& lb, Acc* c, int64_t ldc,
                 Acc beta) {
  PX_ASSERT(la.cols == lb.rows && "gemm: inner dims differ");
  int64_t m = la.rows, n = lb.cols, k = la.cols;
  if (m == 0 || n == 0) return;
  if (k == 0) return scale_c(c, m, n, ldc, beta);
  std::vector<T> a_packed, b_packed;
  std::optional<BlasOperand> oa = blas_operand(la);
  if (!oa) {
    a_packed = pack<T, T>(a, la);
    a = a_packed.data();
    oa = blas_operand(packed_layout(la));
  }
  std::optional<BlasOperand> ob = blas_operand(lb);
  if (!ob) {
    b_packed = pack<T, T>(b, lb);
    b = b_packed.data();
    ob = blas_operand(packed_layout(lb));
  }
  const int64_t lda = oa->ld, ldb = ob->ld;
  auto call = [&](int64_t rows, int64_t cols, const T* a_part, const T* b_part, Acc* c_part) {
    blas_call(oa->trans, ob->trans, blas_int(rows, "m"), blas_int(cols, "n"), blas_int(k, "k"), a_part,
              blas_int(lda, "lda"), b_part, blas_int(ldb, "ldb"), beta, c_part, blas_int(ldc, "ldc"));
  };
  const int64_t parts = split_parts(m, n, k);
  if (parts <= 1) return call(m, n, a, b, c);
  // Split the larger of C's dims, so that the operand every part packs again is the smaller
  // one. An operand's element (i, j) sits at i * ld + j (NoTrans) or j * ld + i (Trans).
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  const int64_t block = (extent / parts + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  const int64_t blocks = (extent + block - 1) / block;
  auto part = [&](int64_t p) {
    const int64_t begin = p * block, size = std::min(block, extent - begin);
    if (by_rows) {
      call(size, n, a + begin * (oa->trans == CblasNoTrans ? lda : 1), b, c + begin * ldc);
    } else {
      call(m, size, a, b + begin * (ob->trans == CblasNoTrans ? 1 : ldb), c + begin);
    }
  };
  // The parts run on the current pool while OpenBLAS is single-threaded; a multi-threaded
  // OpenBLAS runs each part on its own threads instead (core/parallel.h).
  ThreadPool* pool = ParallelScope::current();
  if (pool != nullptr && current_threads() > 1 && blas_threads() == 1) return pool->run(blocks, part);
  for (int64_t p = 0; p < blocks; ++p) part(p);
}

// Folds A's batch dims into its rows when B is shared by the whole batch and the
// rows of all batch elements form one strided run: then the batch is one GEMM.
std::optional<MatrixLayout> fold_batch_into_rows(const BatchedMatmul& args) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (size, stride), outermost first
  for (size_t d = 0; d < args.batch_shape.size(); ++d) {
    if (args.batch_shape[d] == 1) continue;
    if (args.b_batch_strides[d] != 0) return std::nullopt;
    dims.emplace_back(args.batch_shape[d], args.a_batch_strides[d]);
  }
  if (dims.empty()) return std::nullopt;
  if (args.a.rows != 1) dims.emplace_back(args.a.rows, args.a.row_stride);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    if (dims[i].second != dims[i + 1].second * dims[i + 1].first) return std::nullopt;
  }
  MatrixLayout folded{numel(args.batch_shape) * args.a.rows, args.a.cols, dims.back().second, args.a.col_stride};
  if (!blas_operand(folded)) return std::nullopt;
  return folded;
}

// Calls fn(index, a_offset, b_offset) for every batch element in row-major order.
template <class Fn>
void for_each_batch(const BatchedMatmul& args, Fn&& fn) {
  const Shape& shape = args.batch_shape;
  int64_t count = numel(shape);
  std::vector<int64_t> index(shape.size(), 0);
  int64_t a_offset = 0, b_offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    fn(i, a_offset, b_offset);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) {
        a_offset += args.a_batch_strides[d];
        b_offset += args.b_batch_strides[d];
        break;
      }
      a_offset -= (shape[d] - 1) * args.a_batch_strides[d];
      b_offset -= (shape[d] - 1) * args.b_batch_strides[d];
      index[d] = 0;
    }
  }
}

template <class T, class Beta>
void batched_impl(const T* a, const T* b, T* c, const BatchedMatmul& args, Beta beta) {
  int64_t m = args.a.rows, n = args.b.cols;
  int64_t ldc = std::max<int64_t>(n, 1);
  if (std::optional<MatrixLayout> folded = fold_batch_into_rows(args)) {
    gemm(a, *folded, b, args.b, c, ldc, beta);
    return;
  }
  // Batch elements run in parallel, each GEMM whole: the same calls as one thread makes.
  std::vector<std::pair<int64_t, int64_t>> offsets;  // (a, b) per batch element
  offsets.reserve(static_cast<size_t>(numel(args.batch_shape)));
  for_each_batch(args, [&](int64_t, int64_t a_offset, int64_t b_offset) { offsets.emplace_back(a_offset, b_offset); });
  const int64_t count = static_cast<int64_t>(offsets.size());
  const int64_t grain = std::max<int64_t>(1, kSplitMinMacs / std::max<int64_t>(1, m * n * args.a.cols));
  parallel_for(count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const auto [a_offset, b_offset] = offsets[static_cast<size_t>(i)];
      gemm(a + a_offset, args.a, b + b_offset, args.b, c + i * m * n, ldc, beta);
    }
  });
}

}  // namespace

void gemm(const float* a, const MatrixLayout& la, const float* b, const MatrixLayout& lb, float* c, int64_t ldc,
          float beta) {
  gemm_native(a, la, b, lb, c, ldc, beta);
}

void gemm(const double* a, const MatrixLayout& la, const double* b, const MatrixLayout& lb, double* c, int64_t ldc,
          double beta) {
  gemm_native(a, la, b, lb, c, ldc, beta);
}

void gemm(const BFloat16* a, const MatrixLayout& la, const BFloat16* b, const MatrixLayout& lb, BFloat16* c,
          int64_t ldc, float beta) {
  int64_t m = la.rows, n = lb.cols;
  std::vector<float> c32(static_cast<size_t>(m * n), 0.0f);
  if (beta != 0) c32 = pack<BFloat16, float>(c, MatrixLayout{m, n, ldc, 1});
#ifdef PARALLAX_HAVE_SBGEMM
  gemm_native<BFloat16, float>(a, la, b, lb, c32.data(), std::max<int64_t>(n, 1), beta);
#else
  // Without sbgemm (Debian's OpenBLAS 0.3.21 is built without it): widen to float32, sgemm.
  // The products and sums are float32 either way; only the speed differs.
  std::vector<float> a32 = pack<BFloat16, float>(a, la);
  std::vector<float> b32 = pack<BFloat16, float>(b, lb);
  gemm_native(a32.data(), packed_layout(la), b32.data(), packed_layout(lb), c32.data(), std::max<int64_t>(n, 1), beta);
#endif
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = BFloat16(c32[static_cast<size_t>(i * n + j)]);
  }
}

void batched_matmul(const float* a, const float* b, float* c, const BatchedMatmul& args, float beta) {
  batched_impl(a, b, c, args, beta);
}

void batched_matmul(const double* a, const double* b, double* c, const BatchedMatmul& args, double beta) {
  batched_impl(a, b, c, args, beta);
}

void batched_matmul(const BFloat16* a, const BFloat16* b, BFloat16* c, const BatchedMatmul& args, float beta) {
  batched_impl(a, b, c, args, beta);
}

template <class T>
void broadcast_rows(const T* row, int64_t row_stride, int64_t n, T* out, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    T* out_row = out + r * n;
    for (int64_t j = 0; j < n; ++j) out_row[j] = row[j * row_stride];
  }
}

template void broadcast_rows<float>(const float*, int64_t, int64_t, float*, int64_t);
template void broadcast_rows<double>(const double*, int64_t, int64_t, double*, int64_t);
template void broadcast_rows<BFloat16>(const BFloat16*, int64_t, int64_t, BFloat16*, int64_t);

}  // namespace px::kernels

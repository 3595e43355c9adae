#pragma once
// GEMM through OpenBLAS (cblas_sgemm / cblas_dgemm). Operands are strided
// matrices used in place when they are row-major or column-major (a column-major
// operand is passed as CblasTrans); only a matrix that is neither is copied.
// bfloat16 converts to float32, multiplies there and rounds back.
// A large GEMM is always computed as a few whole-k GEMMs over blocks of C's rows or columns
// chosen from its shape alone (OpenBLAS rounds differently at block edges, so this keeps the
// bits independent of the thread count); with OpenBLAS single-threaded and a pool in scope
// (core/parallel.h) the blocks run in parallel, and a batch runs its GEMMs in parallel.

#include <cstdint>

#include "parallax/core/dtype.h"
#include "parallax/core/shape.h"

namespace px::kernels {

// A rows x cols matrix whose element (i, j) sits at data[i * row_stride + j * col_stride].
struct MatrixLayout {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

// C = A·B + beta·C, with A rows x k, B k x cols and C row-major with leading dim
// ldc >= b.cols. beta == 0 overwrites C (its old contents may be garbage).
// Throws ValueError when a dim does not fit BLAS's 32-bit integers.
void gemm(const float* a, const MatrixLayout& la, const float* b, const MatrixLayout& lb, float* c, int64_t ldc,
          float beta = 0);
void gemm(const double* a, const MatrixLayout& la, const double* b, const MatrixLayout& lb, double* c, int64_t ldc,
          double beta = 0);
void gemm(const BFloat16* a, const MatrixLayout& la, const BFloat16* b, const MatrixLayout& lb, BFloat16* c,
          int64_t ldc, float beta = 0);

// C[batch..., m, n] = A[batch..., m, k] · B[batch..., k, n] + beta·C over
// (already broadcast) batch dims; C is contiguous. An operand that broadcasts
// over a batch dim has stride 0 there. When B is shared by the whole batch and
// A's batch dims fold into its rows, the whole batch is one GEMM.
struct BatchedMatmul {
  Shape batch_shape;
  Strides a_batch_strides;
  Strides b_batch_strides;
  MatrixLayout a;  // one batch element of A: m x k
  MatrixLayout b;  // one batch element of B: k x n
};

void batched_matmul(const float* a, const float* b, float* c, const BatchedMatmul& args, float beta = 0);
void batched_matmul(const double* a, const double* b, double* c, const BatchedMatmul& args, double beta = 0);
void batched_matmul(const BFloat16* a, const BFloat16* b, BFloat16* c, const BatchedMatmul& args, float beta = 0);

// Writes `rows` copies of the n-element vector `row` (stride `row_stride`) into
// contiguous `out` [rows, n]: the bias of a linear layer, before a beta = 1 GEMM.
template <class T>
void broadcast_rows(const T* row, int64_t row_stride, int64_t n, T* out, int64_t rows);

extern template void broadcast_rows<float>(const float*, int64_t, int64_t, float*, int64_t);
extern template void broadcast_rows<double>(const double*, int64_t, int64_t, double*, int64_t);
extern template void broadcast_rows<BFloat16>(const BFloat16*, int64_t, int64_t, BFloat16*, int64_t);

}  // namespace px::kernels

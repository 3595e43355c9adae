#pragma once
// The BLAS thread count. Parallax kernels never start threads of their own;
// GEMM runs inside OpenBLAS, whose thread pool is OpenBLAS's own PROCESS-WIDE
// setting: changing it affects every GEMM in the process, on every thread.
// When ranks run as threads, set it to 1 (each rank is one thread) before they start.

#include <string>

namespace px::kernels {

// Sets OpenBLAS's thread count (openblas_set_num_threads); values < 1 mean 1.
void set_blas_threads(int threads);
// OpenBLAS's current thread count (openblas_get_num_threads).
int blas_threads();
// The CPU kernel family OpenBLAS selected at load time, e.g. "Haswell" (openblas_get_corename).
std::string blas_core_name();

}  // namespace px::kernels

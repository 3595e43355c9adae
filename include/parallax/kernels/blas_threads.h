#pragma once
// The BLAS thread count: OpenBLAS's own PROCESS-WIDE setting, which affects every GEMM in the
// process, on every thread. dist::launch sets it to 1 so that GEMMs split over each rank's own
// pool instead (the core-sharing rule is in core/parallel.h).

#include <string>

namespace px::kernels {

// Sets OpenBLAS's thread count (openblas_set_num_threads); values < 1 mean 1.
void set_blas_threads(int threads);
// OpenBLAS's current thread count (openblas_get_num_threads).
int blas_threads();
// The CPU kernel family OpenBLAS selected at load time, e.g. "Haswell" (openblas_get_corename).
std::string blas_core_name();

}  // namespace px::kernels

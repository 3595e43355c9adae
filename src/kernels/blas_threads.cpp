#include "parallax/kernels/blas_threads.h"

#include <cblas.h>

#include <algorithm>

namespace px::kernels {

void set_blas_threads(int threads) { openblas_set_num_threads(std::max(threads, 1)); }

int blas_threads() { return openblas_get_num_threads(); }

std::string blas_core_name() {
  const char* name = openblas_get_corename();
  return name ? std::string(name) : std::string("unknown");
}

}  // namespace px::kernels

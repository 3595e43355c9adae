#include "parallax/kernels/dropout.h"

#include "kernels/softmax_math.h"
#include "parallax/core/generator.h"

namespace px::kernels {

template <class T>
void dropout(const T* x, T* y, int64_t count, double p, uint64_t seed, uint64_t offset) {
  using A = detail::Acc<T>;
  auto scale = static_cast<A>(p < 1.0 ? 1.0 / (1.0 - p) : 0.0);
  for (int64_t i = 0; i < count; ++i) {
    bool keep = philox_uniform(seed, offset, static_cast<uint64_t>(i)) >= p;
    y[i] = detail::convert<T>(keep ? detail::convert<A>(x[i]) * scale : A(0));
  }
}

template void dropout<float>(const float*, float*, int64_t, double, uint64_t, uint64_t);
template void dropout<double>(const double*, double*, int64_t, double, uint64_t, uint64_t);
template void dropout<BFloat16>(const BFloat16*, BFloat16*, int64_t, double, uint64_t, uint64_t);

}  // namespace px::kernels

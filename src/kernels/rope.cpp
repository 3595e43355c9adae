#include "parallax/kernels/rope.h"

#include <cmath>
#include <vector>

#include "kernels/softmax_math.h"

namespace px::kernels {

template <class T>
void rope(const T* x, T* y, int64_t batch, int64_t seq, int64_t dim, const double* frequency, bool inverse) {
  using A = detail::Acc<T>;
  int64_t half = dim / 2;
  // cos and sin per (position, pair), shared by every batch row.
  std::vector<A> cos_table(static_cast<size_t>(seq * half)), sin_table(static_cast<size_t>(seq * half));
  double sign = inverse ? -1.0 : 1.0;
  for (int64_t i = 0; i < half; ++i) {
    for (int64_t t = 0; t < seq; ++t) {
      double angle = sign * static_cast<double>(t) * frequency[i];
      cos_table[t * half + i] = static_cast<A>(std::cos(angle));
      sin_table[t * half + i] = static_cast<A>(std::sin(angle));
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq; ++t) {
      const T* in = x + (b * seq + t) * dim;
      T* out = y + (b * seq + t) * dim;
      const A* c = cos_table.data() + t * half;
      const A* s = sin_table.data() + t * half;
      for (int64_t i = 0; i < half; ++i) {
        auto even = detail::convert<A>(in[2 * i]);
        auto odd = detail::convert<A>(in[2 * i + 1]);
        out[2 * i] = detail::convert<T>(even * c[i] - odd * s[i]);
        out[2 * i + 1] = detail::convert<T>(even * s[i] + odd * c[i]);
      }
    }
  }
}

template void rope<float>(const float*, float*, int64_t, int64_t, int64_t, const double*, bool);
template void rope<double>(const double*, double*, int64_t, int64_t, int64_t, const double*, bool);
template void rope<BFloat16>(const BFloat16*, BFloat16*, int64_t, int64_t, int64_t, const double*, bool);

}  // namespace px::kernels

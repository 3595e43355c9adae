#include "parallax/kernels/copy.h"

#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace px::kernels {

namespace {

int64_t float_to_int64(double value) {
  // A plain cast is undefined for NaN and out-of-range values; saturate instead.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (value != value) return 0;
  if (value >= kTwoTo63) return std::numeric_limits<int64_t>::max();
  if (value < -kTwoTo63) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

template <class Dst, class Src>
inline Dst convert_value(Src value) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return value;
  } else if constexpr (std::is_same_v<Src, BFloat16>) {
    return convert_value<Dst>(static_cast<float>(value));
  } else if constexpr (std::is_same_v<Dst, BFloat16>) {
    return BFloat16(static_cast<float>(value));
  } else if constexpr (std::is_same_v<Dst, bool>) {
    return value != Src(0);
  } else if constexpr (std::is_same_v<Dst, int64_t> && std::is_floating_point_v<Src>) {
    return float_to_int64(static_cast<double>(value));
  } else {
    return static_cast<Dst>(value);
  }
}

template <class Src, class Dst>
void copy_row(const Src* src, int64_t src_step, Dst* dst, int64_t dst_step, int64_t count) {
  if (src_step == 1 && dst_step == 1) {
    if constexpr (std::is_same_v<Src, Dst>) {
      std::memcpy(static_cast<void*>(dst), static_cast<const void*>(src), static_cast<size_t>(count) * sizeof(Src));
    } else {
      // Unit strides and no aliasing: the loop the compiler vectorizes.
      const Src* __restrict in = src;
      Dst* __restrict out = dst;
      for (int64_t i = 0; i < count; ++i) out[i] = convert_value<Dst>(in[i]);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) dst[i * dst_step] = convert_value<Dst>(src[i * src_step]);
}

// The copy's dims after dropping size-1 dims and merging dims that are
// contiguous with their inner neighbour in both src and dst.
struct Layout {
  std::vector<int64_t> sizes, src_strides, dst_strides;
  bool empty = false;
};

Layout coalesce(std::span<const int64_t> shape, std::span<const int64_t> src, std::span<const int64_t> dst) {
  Layout layout;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) layout.empty = true;
    if (shape[d] == 1) continue;
    bool mergeable = !layout.sizes.empty() && layout.src_strides.back() == src[d] * shape[d] &&
                     layout.dst_strides.back() == dst[d] * shape[d];
    if (mergeable) {
      layout.sizes.back() *= shape[d];
      layout.src_strides.back() = src[d];
      layout.dst_strides.back() = dst[d];
      continue;
    }
    layout.sizes.push_back(shape[d]);
    layout.src_strides.push_back(src[d]);
    layout.dst_strides.push_back(dst[d]);
  }
  return layout;
}

template <class Src, class Dst>
void copy_typed(const Layout& layout, const void* src_data, void* dst_data) {
  const Src* src = static_cast<const Src*>(src_data);
  Dst* dst = static_cast<Dst*>(dst_data);
  auto rank = static_cast<int64_t>(layout.sizes.size());
  if (rank == 0) {
    *dst = convert_value<Dst>(*src);
    return;
  }
  int64_t inner = rank - 1;
  int64_t rows = 1;
  for (int64_t d = 0; d < inner; ++d) rows *= layout.sizes[d];
  std::vector<int64_t> counter(static_cast<size_t>(inner), 0);
  int64_t src_offset = 0, dst_offset = 0;
  for (int64_t row = 0; row < rows; ++row) {
    copy_row(src + src_offset, layout.src_strides[inner], dst + dst_offset, layout.dst_strides[inner],
             layout.sizes[inner]);
    // Odometer over the outer dims.
    for (int64_t d = inner - 1; d >= 0; --d) {
      src_offset += layout.src_strides[d];
      dst_offset += layout.dst_strides[d];
      if (++counter[d] < layout.sizes[d]) break;
      src_offset -= layout.src_strides[d] * layout.sizes[d];
      dst_offset -= layout.dst_strides[d] * layout.sizes[d];
      counter[d] = 0;
    }
  }
}

bool same_elements(std::span<const int64_t> shape, const ConstStridedRef& src, const StridedRef& dst) {
  if (src.data != dst.data || src.dtype != dst.dtype) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1 && src.strides[d] != dst.strides[d]) return false;
  }
  return true;
}

}  // namespace

void copy_strided(std::span<const int64_t> shape, ConstStridedRef src, StridedRef dst) {
  if (same_elements(shape, src, dst)) return;
  Layout layout = coalesce(shape, src.strides, dst.strides);
  if (layout.empty) return;
  visit_dtype(src.dtype, [&](auto src_zero) {
    visit_dtype(dst.dtype,
                [&](auto dst_zero) { copy_typed<decltype(src_zero), decltype(dst_zero)>(layout, src.data, dst.data); });
  });
}

void convert_contiguous(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t count) {
  const int64_t shape[] = {count};
  const int64_t unit[] = {1};
  copy_strided(shape, {src, src_dtype, unit}, {dst, dst_dtype, unit});
}

}  // namespace px::kernels

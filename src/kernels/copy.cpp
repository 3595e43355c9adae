#include "parallax/kernels/copy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "parallax/core/parallel.h"

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

// fn(src_offset, dst_offset) at every index of the space `sizes` (outermost
// first), in row-major order: an odometer over the dims.
template <class Fn>
void for_each_index(std::span<const int64_t> sizes, std::span<const int64_t> src_strides,
                    std::span<const int64_t> dst_strides, const Fn& fn) {
  std::vector<int64_t> counter(sizes.size(), 0);
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  int64_t src_offset = 0, dst_offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    fn(src_offset, dst_offset);
    for (size_t d = sizes.size(); d-- > 0;) {
      src_offset += src_strides[d];
      dst_offset += dst_strides[d];
      if (++counter[d] < sizes[d]) break;
      src_offset -= src_strides[d] * sizes[d];
      dst_offset -= dst_strides[d] * sizes[d];
      counter[d] = 0;
    }
  }
}

// A transposing copy walks one operand across its layout: row by row, a 2048 x
// 2048 float32 transpose reads a new cache line and a new page per element
// (1.1 GB/s here). Tiled, each kTile x kTile tile is read into a buffer in the
// source's order and written out in the destination's, so both walk whole
// cache lines and the buffer (4-8 KiB) stays in L1: 9.4 GB/s. Walking the tile
// in place gets 4.6 GB/s, as power-of-two strides put all of a tile's lines of
// one operand in the same L1 set.
constexpr int64_t kTile = 32;

// The outer dim to tile together with the inner one: where one operand steps
// through memory faster than along the inner dim. -1 when rows are the better walk.
int64_t transposed_dim(const Layout& layout) {
  const auto inner = static_cast<int64_t>(layout.sizes.size()) - 1;
  for (const std::vector<int64_t>* strides : {&layout.src_strides, &layout.dst_strides}) {
    int64_t best = -1;
    for (int64_t d = 0; d < inner; ++d) {
      if (best < 0 || std::abs((*strides)[d]) < std::abs((*strides)[best])) best = d;
    }
    if (best >= 0 && std::abs((*strides)[best]) < std::abs((*strides)[inner]) && layout.sizes[inner] >= kTile &&
        layout.sizes[best] >= kTile) {
      return best;
    }
  }
  return -1;
}

// fn(r, c) over an h x w tile, with r or c the inner loop.
template <class Fn>
void walk_tile(bool r_inner, int64_t h, int64_t w, const Fn& fn) {
  if (r_inner) {
    for (int64_t c = 0; c < w; ++c) {
      for (int64_t r = 0; r < h; ++r) fn(r, c);
    }
  } else {
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t c = 0; c < w; ++c) fn(r, c);
    }
  }
}

template <class Src, class Dst>
void copy_tiled(const Src* src, int64_t src_rows, int64_t src_cols, Dst* dst, int64_t dst_rows, int64_t dst_cols,
                int64_t rows, int64_t cols) {
  Dst tile[kTile * kTile];
  const bool src_r_inner = std::abs(src_rows) < std::abs(src_cols);
  const bool dst_r_inner = std::abs(dst_rows) < std::abs(dst_cols);
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t h = std::min(rows - r0, kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t w = std::min(cols - c0, kTile);
      const Src* in = src + r0 * src_rows + c0 * src_cols;
      Dst* out = dst + r0 * dst_rows + c0 * dst_cols;
      if (src_rows == 1 && dst_cols == 1) {  // the common transpose, with unit strides the compiler sees
        for (int64_t c = 0; c < w; ++c) {
          for (int64_t r = 0; r < h; ++r) tile[c * kTile + r] = convert_value<Dst>(in[r + c * src_cols]);
        }
        for (int64_t r = 0; r < h; ++r) {
          for (int64_t c = 0; c < w; ++c) out[r * dst_rows + c] = tile[c * kTile + r];
        }
        continue;
      }
      // The tile is laid out in the source's order, so that reading into it is a plain copy.
      auto at = [&](int64_t r, int64_t c) { return src_r_inner ? c * kTile + r : r * kTile + c; };
      walk_tile(src_r_inner, h, w,
                [&](int64_t r, int64_t c) { tile[at(r, c)] = convert_value<Dst>(in[r * src_rows + c * src_cols]); });
      walk_tile(dst_r_inner, h, w, [&](int64_t r, int64_t c) { out[r * dst_rows + c * dst_cols] = tile[at(r, c)]; });
    }
  }
}

template <class Src, class Dst>
void copy_typed(const Layout& layout, const void* src_data, void* dst_data) {
  const Src* src = static_cast<const Src*>(src_data);
  Dst* dst = static_cast<Dst*>(dst_data);
  const auto rank = static_cast<int64_t>(layout.sizes.size());
  if (rank == 0) {
    *dst = convert_value<Dst>(*src);
    return;
  }
  const int64_t inner = rank - 1;
  const int64_t tiled = transposed_dim(layout);
  if (tiled < 0) {
    auto outer = [&](const std::vector<int64_t>& values) { return std::span(values).first(inner); };
    for_each_index(outer(layout.sizes), outer(layout.src_strides), outer(layout.dst_strides),
                   [&](int64_t src_offset, int64_t dst_offset) {
                     copy_row(src + src_offset, layout.src_strides[inner], dst + dst_offset, layout.dst_strides[inner],
                              layout.sizes[inner]);
                   });
    return;
  }
  // Every dim but the tiled pair, then the pair in tiles.
  std::vector<int64_t> sizes, src_strides, dst_strides;
  for (int64_t d = 0; d < inner; ++d) {
    if (d == tiled) continue;
    sizes.push_back(layout.sizes[d]);
    src_strides.push_back(layout.src_strides[d]);
    dst_strides.push_back(layout.dst_strides[d]);
  }
  for_each_index(sizes, src_strides, dst_strides, [&](int64_t src_offset, int64_t dst_offset) {
    copy_tiled(src + src_offset, layout.src_strides[tiled], layout.src_strides[inner], dst + dst_offset,
               layout.dst_strides[tiled], layout.dst_strides[inner], layout.sizes[tiled], layout.sizes[inner]);
  });
}

// copy_typed on the current pool (core/parallel.h), in slices of the outermost dim: a copy's
// elements do not depend on how it is cut.
template <class Src, class Dst>
void copy_parallel(const Layout& layout, const void* src_data, void* dst_data) {
  if (layout.sizes.empty()) return copy_typed<Src, Dst>(layout, src_data, dst_data);
  int64_t per_slice = 1;
  for (size_t d = 1; d < layout.sizes.size(); ++d) per_slice *= layout.sizes[d];
  parallel_for(layout.sizes[0], rows_per_chunk(per_slice), [&](int64_t begin, int64_t end) {
    Layout part = layout;
    part.sizes[0] = end - begin;
    copy_typed<Src, Dst>(part, static_cast<const Src*>(src_data) + begin * layout.src_strides[0],
                         static_cast<Dst*>(dst_data) + begin * layout.dst_strides[0]);
  });
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
    visit_dtype(dst.dtype, [&](auto dst_zero) {
      copy_parallel<decltype(src_zero), decltype(dst_zero)>(layout, src.data, dst.data);
    });
  });
}

void convert_contiguous(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t count) {
  const int64_t shape[] = {count};
  const int64_t unit[] = {1};
  copy_strided(shape, {src, src_dtype, unit}, {dst, dst_dtype, unit});
}

}  // namespace px::kernels

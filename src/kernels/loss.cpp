#include "parallax/kernels/loss.h"

#include <string>
#include <vector>

#include "kernels/softmax_math.h"
#include "parallax/core/error.h"

namespace px::kernels {

namespace {

using detail::Acc;
using detail::convert;

// The target of row r, or -1 when the row is ignored; throws for a target out of range.
int64_t checked_target(const char* op, const int64_t* target, const LossLayout& layout, int64_t ignore_index,
                       int64_t r) {
  int64_t t = target[r * layout.target_stride];
  if (t == ignore_index) return -1;
  if (t < 0 || t >= layout.classes) {
    throw ValueError(std::string(op) + ": target " + std::to_string(t) + " at row " + std::to_string(r) +
                     " is out of range for " + std::to_string(layout.classes) + " classes (ignore_index is " +
                     std::to_string(ignore_index) + ")");
  }
  return t;
}

// Collects per-row losses and writes them, or their sum or mean, into `out`.
template <class T>
class LossWriter {
 public:
  LossWriter(T* out, LossReduction reduction) : out_(out), reduction_(reduction) {}
  void add(int64_t row, double loss) {
    if (reduction_ == LossReduction::None) out_[row] = convert<T>(loss);
    total_ += loss;
    ++count_;
  }
  void skip(int64_t row) {
    if (reduction_ == LossReduction::None) out_[row] = convert<T>(0.0);
  }
  void finish() {
    if (reduction_ == LossReduction::Sum) out_[0] = convert<T>(total_);
    // 0 / 0 is NaN: the mean over no counted rows, as in PyTorch.
    if (reduction_ == LossReduction::Mean) out_[0] = convert<T>(total_ / static_cast<double>(count_));
  }

 private:
  T* out_;
  LossReduction reduction_;
  double total_ = 0;
  int64_t count_ = 0;
};

// Row r of the scores in the accumulation type: a direct pointer when possible, else gathered into `scratch`.
template <class T>
PX_ROW_INLINE const Acc<T>* row_as_acc(const T* scores, const LossLayout& layout, int64_t r, Acc<T>* scratch) {
  const T* row = scores + r * layout.row_stride;
  if constexpr (std::is_same_v<T, Acc<T>>) {
    if (layout.class_stride == 1) return row;
  }
  for (int64_t c = 0; c < layout.classes; ++c) scratch[c] = convert<Acc<T>>(row[c * layout.class_stride]);
  return scratch;
}

// Per row: logsumexp(row) - row[target], one pass over the row while it is in cache.
template <class T, class V>
PX_ROW_INLINE void cross_entropy_rows(const T* logits, const int64_t* target, const LossLayout& layout,
                                      int64_t ignore_index, LossWriter<T>& writer, Acc<T>* gathered, Acc<T>* exps) {
  using A = Acc<T>;
  for (int64_t r = 0; r < layout.rows; ++r) {
    int64_t t = checked_target("cross_entropy", target, layout, ignore_index, r);
    if (t < 0) {
      writer.skip(r);
      continue;
    }
    const A* row = row_as_acc(logits, layout, r, gathered);
    A lse = detail::row_logsumexp<A, V>(row, layout.classes, exps);
    writer.add(r, static_cast<double>(lse) - static_cast<double>(row[t]));
  }
}

#if PX_KERNELS_HAVE_AVX2
template <class T>
PX_TARGET_AVX2 void cross_entropy_rows_avx2(const T* logits, const int64_t* target, const LossLayout& layout,
                                            int64_t ignore_index, LossWriter<T>& writer, float* gathered, float* exps) {
  cross_entropy_rows<T, detail::Float8>(logits, target, layout, ignore_index, writer, gathered, exps);
}
#endif

}  // namespace

template <class T>
void cross_entropy(const T* logits, const int64_t* target, const LossLayout& layout, int64_t ignore_index,
                   LossReduction reduction, T* out) {
  using A = Acc<T>;
  std::vector<A> gathered(static_cast<size_t>(layout.classes)), exps(static_cast<size_t>(layout.classes));
  LossWriter<T> writer(out, reduction);
  if constexpr (std::is_same_v<A, double>) {
    cross_entropy_rows<T, void>(logits, target, layout, ignore_index, writer, gathered.data(), exps.data());
  } else {
#if PX_KERNELS_HAVE_AVX2
    if (detail::cpu_has_avx2()) {
      cross_entropy_rows_avx2<T>(logits, target, layout, ignore_index, writer, gathered.data(), exps.data());
      writer.finish();
      return;
    }
#endif
    cross_entropy_rows<T, detail::Float4>(logits, target, layout, ignore_index, writer, gathered.data(), exps.data());
  }
  writer.finish();
}

template <class T>
void nll_loss(const T* logp, const int64_t* target, const LossLayout& layout, int64_t ignore_index,
              LossReduction reduction, T* out) {
  LossWriter<T> writer(out, reduction);
  for (int64_t r = 0; r < layout.rows; ++r) {
    int64_t t = checked_target("nll_loss", target, layout, ignore_index, r);
    if (t < 0) {
      writer.skip(r);
      continue;
    }
    writer.add(r, -convert<double>(logp[r * layout.row_stride + t * layout.class_stride]));
  }
  writer.finish();
}

template void cross_entropy<float>(const float*, const int64_t*, const LossLayout&, int64_t, LossReduction, float*);
template void cross_entropy<double>(const double*, const int64_t*, const LossLayout&, int64_t, LossReduction, double*);
template void cross_entropy<BFloat16>(const BFloat16*, const int64_t*, const LossLayout&, int64_t, LossReduction,
                                      BFloat16*);
template void nll_loss<float>(const float*, const int64_t*, const LossLayout&, int64_t, LossReduction, float*);
template void nll_loss<double>(const double*, const int64_t*, const LossLayout&, int64_t, LossReduction, double*);
template void nll_loss<BFloat16>(const BFloat16*, const int64_t*, const LossLayout&, int64_t, LossReduction, BFloat16*);

}  // namespace px::kernels

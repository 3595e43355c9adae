#pragma once
// Classification losses over a [rows, classes] buffer addressed by strides (in
// elements), so a transposed or sliced input needs no copy. A row whose target
// equals ignore_index contributes nothing and is not counted; any other target
// outside [0, classes) throws ValueError naming the row, the target and the class count.
// Instantiated for float, double and BFloat16 (computed in float32; sums in float64).

#include <cstdint>

namespace px::kernels {

enum class LossReduction : uint8_t { None, Mean, Sum };

struct LossLayout {
  int64_t rows = 0;
  int64_t classes = 0;
  int64_t row_stride = 0;    // between rows of the scores
  int64_t class_stride = 1;  // between classes of one row
  int64_t target_stride = 1;
};

// out: `rows` values for None (0 for ignored rows), else one value. Mean divides by the number of
// counted rows (NaN when there are none, as in PyTorch).
// Fused: loss_r = logsumexp(logits_r) - logits_r[target_r], one pass over each row in cache.
template <class T>
void cross_entropy(const T* logits, const int64_t* target, const LossLayout& layout, int64_t ignore_index,
                   LossReduction reduction, T* out);
// loss_r = -logp_r[target_r].
template <class T>
void nll_loss(const T* logp, const int64_t* target, const LossLayout& layout, int64_t ignore_index,
              LossReduction reduction, T* out);

}  // namespace px::kernels

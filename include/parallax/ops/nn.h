#pragma once
// The NN family's functional API: thin wrappers over the dispatcher (so every
// call traces, runs on meta tensors, and differentiates like any op).

#include <cstdint>
#include <string_view>

#include "parallax/core/dtype.h"
#include "parallax/core/tensor.h"

namespace px {

class Generator;

// Numerically stable (log-)softmax along `dim`.
Tensor softmax(const Tensor& x, int64_t dim = -1);
Tensor log_softmax(const Tensor& x, int64_t dim = -1);

// Normalizes over the last `ndims` dims; weight and bias (optional: pass an undefined Tensor)
// have exactly those dims. A bias without a weight uses a weight of ones.
Tensor layer_norm(const Tensor& x, const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5,
                  int64_t ndims = 1);
Tensor rms_norm(const Tensor& x, const Tensor& weight = {}, double eps = 1e-6, int64_t ndims = 1);

// weight [V, D], indices int64 [...] -> [..., D].
Tensor embedding(const Tensor& weight, const Tensor& indices);
// grad [..., D], indices [...] -> [num_weights, D], rows scatter-added.
Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights);
// indices int64 [...] -> [..., num_classes].
Tensor one_hot(const Tensor& indices, int64_t num_classes, DType dtype = DType::Float32);

// logp / logits [N, C], target int64 [N]; reduction "mean" (over rows whose target is not
// ignore_index), "sum" or "none" ([N], ignored rows 0).
Tensor nll_loss(const Tensor& logp, const Tensor& target, std::string_view reduction = "mean",
                int64_t ignore_index = -100);
Tensor cross_entropy(const Tensor& logits, const Tensor& target, std::string_view reduction = "mean",
                     int64_t ignore_index = -100);

// softmax(q kᵀ * scale [+ causal mask]) v for q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]; batch dims
// broadcast. scale 0 means 1/sqrt(D). The causal mask hides key j from query i when j > i (top-left
// aligned, as PyTorch's is_causal). Grouped KV heads are expanded by the caller.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal = false,
                                    double scale = 0.0);

// Llama 3's rescaling of rope's frequencies (Hugging Face's rope_type "llama3"): a pair whose
// wavelength 2π / f is longer than original_max_seq / low_freq_factor turns `factor` times slower,
// one shorter than original_max_seq / high_freq_factor keeps f, and those between blend the two
// linearly in original_max_seq / wavelength. factor 1 leaves every frequency as it is.
struct RopeScaling {
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_seq = 8192;

  bool scales() const { return factor != 1.0; }
  friend bool operator==(const RopeScaling&, const RopeScaling&) = default;
};

// Rotary embedding of x [..., T, D] on the pairs (x[2i], x[2i+1]) at position t by t * f_i with
// f_i = theta^(-2i/D), rescaled by `scaling`; inverse rotates back.
Tensor rope(const Tensor& x, double theta = 10000.0, bool inverse = false, const RopeScaling& scaling = {});

// Zeroes each element with probability p and scales the rest by 1 / (1 - p). The mask comes from
// (seed, offset, element index); the generator form draws the offset and advances past numel elements.
Tensor dropout(const Tensor& x, double p, Generator& generator);
Tensor dropout(const Tensor& x, double p, uint64_t seed, uint64_t offset);

}  // namespace px

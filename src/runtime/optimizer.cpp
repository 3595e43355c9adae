// sqrt without errno, so that the AdamW loop vectorizes (sqrt of a negative never happens there,
// and IEEE sqrt is correctly rounded in every lane width: the bits do not change).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno")
#endif

#include "parallax/runtime/optimizer.h"

#include <array>
#include <cmath>
#include <span>
#include <string>
#include <type_traits>

#include "kernels/row_clones.h"
#include "parallax/core/error.h"
#include "parallax/core/parallel.h"
#include "parallax/kernels/strided_iter.h"

namespace px::runtime {

namespace {

// bfloat16 values compute in float, like every bfloat16 kernel.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
Compute<T> load(const T& value) {
  return static_cast<Compute<T>>(value);
}

template <class T>
T store(Compute<T> value) {
  return T(value);
}

DType state_dtype(DType param) { return param == DType::Float64 ? DType::Float64 : DType::Float32; }

bool overlaps(const Tensor& tensor) {
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    if (tensor.size(d) > 1 && tensor.stride(d) == 0) return true;
  }
  return false;
}

std::string index_str(size_t index) { return std::to_string(index); }

// Calls fn(param element, grad element, state index) over every element in row-major order;
// the state tensors are contiguous, parameter and gradient may have any strides.
template <class T, class Fn>
void for_each_element(const Tensor& param, const Tensor& grad, Fn&& fn) {
  if (param.numel() == 0) return;
  T* p = param.data<T>();
  const T* g = grad.data<T>();
  if (param.is_contiguous() && grad.is_contiguous()) {
    for (int64_t i = 0; i < param.numel(); ++i) fn(p[i], g[i], i);
    return;
  }
  Strides state_strides = contiguous_strides(param.shape());
  kernels::StridedIter<3> it(param.shape(),
                             {std::span<const int64_t>(param.strides()), std::span<const int64_t>(grad.strides()),
                              std::span<const int64_t>(state_strides)});
  const int64_t row = it.row_size();
  const std::array<int64_t, 3> steps = it.row_strides();
  it.for_each_row([&](const std::array<int64_t, 3>& start) {
    for (int64_t k = 0; k < row; ++k)
      fn(p[start[0] + k * steps[0]], g[start[1] + k * steps[1]], start[2] + k * steps[2]);
  });
}

void check_non_negative(std::string_view who, std::string_view what, double value) {
  if (!(value >= 0.0))
    throw ValueError(std::string(who) + ": invalid " + std::string(what) + " " + std::to_string(value) +
                     " (must be >= 0)");
}

// --- SGD (torch.optim.sgd._single_tensor_sgd) ---

template <class T>
void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& buffer, bool first, const SgdOptions& o) {
  using C = Compute<T>;
  const C weight_decay = static_cast<C>(o.weight_decay);
  const C momentum = static_cast<C>(o.momentum);
  const C one_minus_dampening = static_cast<C>(1.0 - o.dampening);
  const C neg_lr = static_cast<C>(-o.lr);
  C* buf = buffer.defined() ? buffer.data<C>() : nullptr;
  for_each_element<T>(param, grad, [&](T& p, const T& g, int64_t s) {
    C d_p = load(g);
    if (o.weight_decay != 0) d_p = d_p + weight_decay * load(p);  // grad.add(param, alpha=weight_decay)
    if (buf) {
      C b;
      if (first) {
        b = d_p;  // torch.clone(grad)
      } else {
        b = buf[s] * momentum;              // buf.mul_(momentum)
        b = b + one_minus_dampening * d_p;  // .add_(grad, alpha=1 - dampening)
      }
      buf[s] = b;
      d_p = o.nesterov ? d_p + momentum * b : b;
    }
    p = store<T>(load(p) + neg_lr * d_p);  // param.add_(grad, alpha=-lr)
  });
}

// --- AdamW (torch.optim.adam._single_tensor_adam with decoupled weight decay) ---

// at::lerp: the formula depends on the weight so that both ends are exact.
template <class C>
C lerp(C self, C end, C weight) {
  return std::abs(weight) < C(0.5) ? self + weight * (end - self) : end - (end - self) * (C(1) - weight);
}

// The scalars of one AdamW step, rounded once to the compute type.
template <class C>
struct AdamWScalars {
  C decay, one_minus_beta1, beta2, one_minus_beta2, correction2, eps, neg_step_size;
};

template <class T, class C>
inline void adamw_element(T& p, const T& g, C& m, C& v, const AdamWScalars<C>& k) {
  C gv = load(g);
  C pv = load(p) * k.decay;                         // param.mul_(1 - lr * weight_decay)
  C mv = lerp(m, gv, k.one_minus_beta1);            // exp_avg.lerp_(grad, 1 - beta1)
  C vv = v * k.beta2;                               // exp_avg_sq.mul_(beta2)
  vv = vv + k.one_minus_beta2 * gv * gv;            // .addcmul_(grad, grad, value=1 - beta2)
  C denom = std::sqrt(vv) / k.correction2 + k.eps;  // (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
  pv = pv + k.neg_step_size * mv / denom;           // param.addcdiv_(exp_avg, denom, value=-step_size)
  m = mv;
  v = vv;
  p = store<T>(pv);
}

// Contiguous parameter and gradient: a loop over unaliased pointers, which g++ vectorizes.
template <class T, class C>
PX_ROW_CLONES void adamw_contiguous(T* __restrict p, const T* __restrict g, C* __restrict m, C* __restrict v, int64_t n,
                                    const AdamWScalars<C>& k) {
  for (int64_t i = 0; i < n; ++i) adamw_element(p[i], g[i], m[i], v[i], k);
}

// Elements per parallel chunk: enough that a chunk outlasts waking a thread.
constexpr int64_t kOptimizerGrain = int64_t{1} << 15;

template <class T>
void adamw_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  int64_t step, const AdamWOptions& o) {
  using C = Compute<T>;
  // The scalars are Python floats in torch: computed in double, rounded once for the kernel.
  const double bias_correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const double step_size = o.lr / bias_correction1;
  const double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);
  const AdamWScalars<C> k{static_cast<C>(1.0 - o.lr * o.weight_decay),
                          static_cast<C>(1.0 - o.beta1),
                          static_cast<C>(o.beta2),
                          static_cast<C>(1.0 - o.beta2),
                          static_cast<C>(bias_correction2_sqrt),
                          static_cast<C>(o.eps),
                          static_cast<C>(-step_size)};
  C* m = exp_avg.data<C>();
  C* v = exp_avg_sq.data<C>();
  if (param.is_contiguous() && grad.is_contiguous()) {
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    parallel_for(param.numel(), kOptimizerGrain, [&](int64_t begin, int64_t end) {
      adamw_contiguous(p + begin, g + begin, m + begin, v + begin, end - begin, k);
    });
    return;
  }
  for_each_element<T>(param, grad, [&](T& p, const T& g, int64_t s) { adamw_element(p, g, m[s], v[s], k); });
}

// visit_dtype for the floating dtypes only (the constructor rejects the others).
template <class Fn>
void visit_float(DType dtype, Fn&& fn) {
  visit_dtype(dtype, [&](auto zero) {
    if constexpr (std::is_same_v<decltype(zero), int64_t> || std::is_same_v<decltype(zero), bool>) {
      throw ValueError("optimizer: no floating dtype " + std::string(dtype_name(dtype)));
    } else {
      fn(zero);
    }
  });
}

int64_t bytes_of(const std::vector<Tensor>& tensors) {
  int64_t total = 0;
  for (const Tensor& t : tensors) {
    if (t.defined()) total += t.meta_info().nbytes();
  }
  return total;
}

}  // namespace

// --- Optimizer ---

Optimizer::Optimizer(std::vector<Tensor> params, std::string_view who) : params_(std::move(params)) {
  std::string prefix(who);
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    std::string label = prefix + ": parameter " + index_str(i);
    if (!p.defined()) throw ValueError(label + " is undefined");
    if (!p.is_dense()) throw ValueError(label + " " + p.meta_info().str() + " is not a dense tensor");
    if (!is_floating(p.dtype())) throw ValueError(label + " " + p.meta_info().str() + " is not floating point");
    if (overlaps(p)) {
      throw ValueError(label + " " + p.meta_info().str() +
                       " has a stride-0 dim (an expanded view), so an in-place update would write an element twice");
    }
    for (size_t j = 0; j < i; ++j) {
      const Tensor& q = params_[j];
      if (p.storage() == q.storage() && p.offset() == q.offset() && p.shape() == q.shape() &&
          p.strides() == q.strides()) {
        throw ValueError(label + " is parameter " + index_str(j) + " again; each would be updated twice");
      }
    }
  }
}

void Optimizer::check_grads(const std::vector<Tensor>& grads) const {
  std::string who(name());
  if (grads.size() != params_.size()) {
    throw ValueError(who + ".step: got " + std::to_string(grads.size()) + " gradients for " +
                     std::to_string(params_.size()) + " parameters");
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined()) continue;
    std::string label = who + ".step: gradient " + index_str(i);
    if (!g.is_dense()) throw ValueError(label + " " + g.meta_info().str() + " is not a dense tensor");
    if (g.meta_info() != params_[i].meta_info()) {
      throw ValueError(label + " is " + g.meta_info().str() + " but its parameter is " + params_[i].meta_info().str());
    }
  }
}

// --- Sgd ---

Sgd::Sgd(std::vector<Tensor> params, SgdOptions options) : Optimizer(std::move(params), "SGD"), options_(options) {
  check_non_negative("SGD", "learning rate", options_.lr);
  check_non_negative("SGD", "momentum", options_.momentum);
  check_non_negative("SGD", "weight_decay", options_.weight_decay);
  if (options_.nesterov && (options_.momentum <= 0 || options_.dampening != 0)) {
    throw ValueError("SGD: Nesterov momentum requires a momentum and zero dampening");
  }
  buffers_.resize(params_.size());
  started_.assign(params_.size(), false);
  if (options_.momentum != 0) {
    for (size_t i = 0; i < params_.size(); ++i) {
      buffers_[i] = Tensor::zeros(params_[i].shape(), state_dtype(params_[i].dtype()));
    }
  }
}

void Sgd::set_lr(double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr)) throw ValueError("SGD.set_lr: invalid learning rate " + std::to_string(lr));
  options_.lr = lr;
}

void Sgd::step(const std::vector<Tensor>& grads) {
  check_grads(grads);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i].defined()) continue;
    visit_float(params_[i].dtype(), [&](auto tag) {
      sgd_update<decltype(tag)>(params_[i], grads[i], buffers_[i], !started_[i], options_);
    });
    started_[i] = true;
  }
}

int64_t Sgd::state_bytes() const { return bytes_of(buffers_); }

Tensor Sgd::momentum_buffer(size_t index) const {
  if (index >= params_.size()) {
    throw ValueError("SGD.momentum_buffer: index " + index_str(index) + " of " + std::to_string(params_.size()) +
                     " parameters");
  }
  return started_[index] ? buffers_[index] : Tensor();
}

std::vector<std::pair<std::string, Tensor>> Sgd::state_tensors(size_t index) const {
  if (index >= params_.size()) throw ValueError("SGD.state_tensors: index " + index_str(index) + " out of range");
  if (!buffers_[index].defined()) return {};
  return {{"momentum_buffer", buffers_[index]}};
}

int64_t Sgd::steps_taken(size_t index) const {
  if (index >= params_.size()) throw ValueError("SGD.steps_taken: index " + index_str(index) + " out of range");
  return started_[index] ? 1 : 0;
}

void Sgd::restore_steps(size_t index, int64_t steps) {
  if (index >= params_.size() || steps < 0) {
    throw ValueError("SGD.restore_steps: index " + index_str(index) + " of " + std::to_string(params_.size()) +
                     " parameters, steps " + std::to_string(steps) + " (must be in range and non-negative)");
  }
  started_[index] = steps > 0;
}

// --- AdamW ---

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : Optimizer(std::move(params), "AdamW"), options_(options) {
  check_non_negative("AdamW", "learning rate", options_.lr);
  check_non_negative("AdamW", "epsilon value", options_.eps);
  check_non_negative("AdamW", "weight_decay value", options_.weight_decay);
  if (!(options_.beta1 >= 0 && options_.beta1 < 1)) {
    throw ValueError("AdamW: invalid beta1 " + std::to_string(options_.beta1) + " (must be in [0, 1))");
  }
  if (!(options_.beta2 >= 0 && options_.beta2 < 1)) {
    throw ValueError("AdamW: invalid beta2 " + std::to_string(options_.beta2) + " (must be in [0, 1))");
  }
  for (const Tensor& p : params_) {
    exp_avg_.push_back(Tensor::zeros(p.shape(), state_dtype(p.dtype())));
    exp_avg_sq_.push_back(Tensor::zeros(p.shape(), state_dtype(p.dtype())));
  }
  steps_.assign(params_.size(), 0);
}

void AdamW::set_lr(double lr) {
  if (!(lr >= 0.0) || !std::isfinite(lr)) throw ValueError("AdamW.set_lr: invalid learning rate " + std::to_string(lr));
  options_.lr = lr;
}

void AdamW::step(const std::vector<Tensor>& grads) {
  check_grads(grads);
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!grads[i].defined()) continue;
    int64_t step = ++steps_[i];
    visit_float(params_[i].dtype(), [&](auto tag) {
      adamw_update<decltype(tag)>(params_[i], grads[i], exp_avg_[i], exp_avg_sq_[i], step, options_);
    });
  }
}

int64_t AdamW::state_bytes() const { return bytes_of(exp_avg_) + bytes_of(exp_avg_sq_); }

Tensor AdamW::exp_avg(size_t index) const {
  if (index >= params_.size()) throw ValueError("AdamW.exp_avg: index " + index_str(index) + " out of range");
  return exp_avg_[index];
}

Tensor AdamW::exp_avg_sq(size_t index) const {
  if (index >= params_.size()) throw ValueError("AdamW.exp_avg_sq: index " + index_str(index) + " out of range");
  return exp_avg_sq_[index];
}

int64_t AdamW::step_count(size_t index) const {
  if (index >= params_.size()) throw ValueError("AdamW.step_count: index " + index_str(index) + " out of range");
  return steps_[index];
}

std::vector<std::pair<std::string, Tensor>> AdamW::state_tensors(size_t index) const {
  return {{"exp_avg", exp_avg(index)}, {"exp_avg_sq", exp_avg_sq(index)}};
}

void AdamW::restore_steps(size_t index, int64_t steps) {
  if (index >= params_.size() || steps < 0) {
    throw ValueError("AdamW.restore_steps: index " + index_str(index) + " of " + std::to_string(params_.size()) +
                     " parameters, steps " + std::to_string(steps) + " (must be in range and non-negative)");
  }
  steps_[index] = steps;
}

// --- clipping ---

namespace {

// Calls fn(element) over every element of a dense tensor, any strides.
template <class T, class Fn>
void for_each_value(const Tensor& tensor, Fn&& fn) {
  if (tensor.numel() == 0) return;
  T* data = tensor.data<T>();
  if (tensor.is_contiguous()) {
    for (int64_t i = 0; i < tensor.numel(); ++i) fn(data[i]);
    return;
  }
  kernels::StridedIter<1> it(tensor.shape(), {std::span<const int64_t>(tensor.strides())});
  const int64_t row = it.row_size();
  const int64_t step = it.row_strides()[0];
  it.for_each_row([&](const std::array<int64_t, 1>& start) {
    for (int64_t k = 0; k < row; ++k) fn(data[start[0] + k * step]);
  });
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm, const std::vector<double>& weights,
                      const std::function<double(double)>& sum_across_ranks) {
  if (!weights.empty() && weights.size() != grads.size()) {
    throw ValueError("clip_grad_norm: got " + std::to_string(weights.size()) + " weights for " +
                     std::to_string(grads.size()) + " gradients");
  }
  if (!(max_norm >= 0.0)) throw ValueError("clip_grad_norm: max_norm " + std::to_string(max_norm) + " must be >= 0");
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!weights.empty() && !(weights[i] >= 0.0 && std::isfinite(weights[i]))) {
      throw ValueError("clip_grad_norm: weight " + index_str(i) + " is " + std::to_string(weights[i]) +
                       "; weights must be finite and >= 0");
    }
    if (!g.defined()) continue;
    std::string label = "clip_grad_norm: gradient " + index_str(i) + " " + g.meta_info().str();
    if (!g.is_dense()) throw ValueError(label + " is not a dense tensor");
    if (!is_floating(g.dtype())) throw ValueError(label + " is not floating point");
    if (overlaps(g)) throw ValueError(label + " has a stride-0 dim (an expanded view) and cannot be scaled in place");
  }
  double local = 0.0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    double squares = 0.0;
    visit_float(grads[i].dtype(), [&](auto tag) {
      using T = decltype(tag);
      for_each_value<T>(grads[i], [&](const T& value) {
        double x = static_cast<double>(load(value));
        squares += x * x;
      });
    });
    local += (weights.empty() ? 1.0 : weights[i]) * squares;
  }
  double global = sum_across_ranks ? sum_across_ranks(local) : local;
  double total = std::sqrt(global);
  double coef = max_norm / (total + 1e-6);
  if (coef >= 1.0) return total;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    visit_float(g.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const Compute<T> scale = static_cast<Compute<T>>(coef);
      for_each_value<T>(g, [&](T& value) { value = store<T>(load(value) * scale); });
    });
  }
  return total;
}

}  // namespace px::runtime

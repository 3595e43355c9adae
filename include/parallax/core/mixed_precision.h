#pragma once
// MixedPrecisionPolicy: how a training step mixes dtypes, after PyTorch FSDP2's policy of the
// same name (param_dtype, reduce_dtype, output_dtype), and read by every layer that cares:
//
//   capture    casts each floating parameter to `param_dtype` where the forward first sees it
//              (the module's slots hold the cast), so the forward and its backward compute in
//              that dtype, and casts the forward's floating outputs to `output_dtype`;
//   autodiff   needs nothing more: the gradient of a cast is the cast back, so each
//              parameter's gradient leaves the step in the parameter's own (master) dtype;
//   plan       prices every op, byte and collective in the dtype it runs in, and places each
//              gradient's reduction before or after that cast back, as `reduce_dtype` says;
//   runtime    keeps the parameters (float32 masters) and the optimizer state as registered:
//              the optimizer updates the master with a gradient in the master's dtype.
//
// An empty field changes nothing; an empty reduce_dtype reduces in param_dtype (FSDP2's default).

#include <optional>
#include <string>
#include <string_view>

#include "parallax/core/dtype.h"

namespace px {

struct MixedPrecisionPolicy {
  std::optional<DType> param_dtype;   // compute copy of every floating parameter
  std::optional<DType> reduce_dtype;  // gradient reductions across ranks
  std::optional<DType> output_dtype;  // the forward's floating outputs

  bool empty() const { return !param_dtype && !reduce_dtype && !output_dtype; }
  // The dtype a gradient of a `master`-dtype parameter is reduced in under this policy.
  DType reduce_dtype_for(DType master) const { return reduce_dtype.value_or(param_dtype.value_or(master)); }
  // ValueError naming `where` and the field for a non-floating dtype.
  void validate(std::string_view where) const;
  // "param bf16, reduce f32, output as computed"; "float32 throughout" when empty.
  std::string str() const;
  friend bool operator==(const MixedPrecisionPolicy&, const MixedPrecisionPolicy&) = default;
};

}  // namespace px

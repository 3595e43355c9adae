#include "parallax/core/mixed_precision.h"

#include "parallax/core/error.h"

namespace px {

void MixedPrecisionPolicy::validate(std::string_view where) const {
  auto check = [&](const std::optional<DType>& dtype, std::string_view field) {
    if (dtype && !is_floating(*dtype)) {
      throw ValueError(std::string(where) + ": mixed-precision " + std::string(field) +
                       " must be a floating dtype (f32, f64, bf16), got " + std::string(dtype_name(*dtype)));
    }
  };
  check(param_dtype, "param_dtype");
  check(reduce_dtype, "reduce_dtype");
  check(output_dtype, "output_dtype");
}

std::string MixedPrecisionPolicy::str() const {
  if (empty()) return "as registered (no mixed precision)";
  auto name = [](const std::optional<DType>& dtype, std::string_view otherwise) {
    return dtype ? std::string(dtype_name(*dtype)) : std::string(otherwise);
  };
  return "param " + name(param_dtype, "as registered") + ", reduce " +
         name(reduce_dtype, param_dtype ? dtype_name(*param_dtype) : "as registered") + ", output " +
         name(output_dtype, "as computed");
}

}  // namespace px

#include "parallax/core/dtype.h"

#include "parallax/core/error.h"

namespace px {

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
    case DType::Int64:
      return 8;
    case DType::Bool:
      return 1;
    case DType::BFloat16:
      return 2;
  }
  PX_ASSERT(false && "unknown dtype");
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
    case DType::Int64:
      return "i64";
    case DType::Bool:
      return "bool";
    case DType::BFloat16:
      return "bf16";
  }
  PX_ASSERT(false && "unknown dtype");
}

DType parse_dtype(std::string_view name) {
  for (DType dtype : kAllDTypes) {
    if (dtype_name(dtype) == name) return dtype;
  }
  throw ValueError("unknown dtype '" + std::string(name) + "' (expected f32, f64, i64, bool or bf16)");
}

bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::BFloat16; }

}  // namespace px

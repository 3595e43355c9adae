#pragma once
// Mixed-precision options shared by `plan` and `run`: --param-dtype, --reduce-dtype and
// --output-dtype (f32, f64, bf16; empty: no cast), as PyTorch FSDP2's MixedPrecisionPolicy.

#include <CLI/CLI.hpp>
#include <string>

#include "parallax/core/mixed_precision.h"

namespace px::cli {

struct PrecisionArguments {
  std::string param_dtype;
  std::string reduce_dtype;
  std::string output_dtype;
};

void add_precision_options(CLI::App& sub, PrecisionArguments& args);
MixedPrecisionPolicy precision_policy(const PrecisionArguments& args);

}  // namespace px::cli

#pragma once
// Options of how a step is trained, shared by `plan` and `run`: mixed precision (--param-dtype,
// --reduce-dtype and --output-dtype: f32, f64, bf16; empty: no cast, as PyTorch FSDP2's
// MixedPrecisionPolicy) and activation checkpointing (--ac).

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
// --ac none|selective|full|auto (activation checkpointing; plan/builder.h).
void add_checkpointing_option(CLI::App& sub, std::string& policy);
MixedPrecisionPolicy precision_policy(const PrecisionArguments& args);

}  // namespace px::cli

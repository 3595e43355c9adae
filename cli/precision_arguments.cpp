#include "precision_arguments.h"

namespace px::cli {

namespace {

const std::vector<std::string> kFloatingNames{"f32", "float32", "f64", "float64", "bf16", "bfloat16"};

std::optional<DType> parse_optional(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (text == "float32") return DType::Float32;
  if (text == "float64") return DType::Float64;
  if (text == "bfloat16") return DType::BFloat16;
  return parse_dtype(text);
}

}  // namespace

void add_precision_options(CLI::App& sub, PrecisionArguments& args) {
  sub.add_option("--param-dtype", args.param_dtype,
                 "Mixed precision: compute in this dtype (bf16, f32, f64); parameters and optimizer state stay as "
                 "registered (float32 masters)")
      ->check(CLI::IsMember(kFloatingNames));
  sub.add_option("--reduce-dtype", args.reduce_dtype,
                 "Mixed precision: reduce gradients across ranks in this dtype (default: --param-dtype)")
      ->check(CLI::IsMember(kFloatingNames));
  sub.add_option("--output-dtype", args.output_dtype, "Mixed precision: cast the loss to this dtype")
      ->check(CLI::IsMember(kFloatingNames));
}

void add_checkpointing_option(CLI::App& sub, std::string& policy) {
  sub.add_option("--ac", policy,
                 "Activation checkpointing: none, selective (recompute all but matmuls and attention), full "
                 "(recompute all but each layer's outputs) or auto (the solver decides, under the memory budget)")
      ->check(CLI::IsMember({"none", "selective", "full", "auto"}))
      ->capture_default_str();
}

MixedPrecisionPolicy precision_policy(const PrecisionArguments& args) {
  MixedPrecisionPolicy policy{parse_optional(args.param_dtype), parse_optional(args.reduce_dtype),
                              parse_optional(args.output_dtype)};
  policy.validate("--param-dtype/--reduce-dtype/--output-dtype");
  return policy;
}

}  // namespace px::cli

#include "parallax/ops/op_def.h"

namespace px {

std::string OpDef::signature() const {
  std::string out = name + "(";
  bool first = true;
  for (const InputSpec& input : inputs) {
    out += first ? "" : ", ";
    first = false;
    out += std::string(input.variadic ? "Tensor... " : input.optional ? "Tensor? " : "Tensor ") + input.name;
  }
  for (const AttrSpec& attr : attrs) {
    out += first ? "" : ", ";
    first = false;
    out += std::string(attr_type_name(attr.type)) + " " + attr.name;
    if (attr.default_value) out += "=" + attr_value_str(*attr.default_value);
  }
  return out + ")";
}

int64_t OpDef::min_inputs() const {
  int64_t count = 0;
  for (const InputSpec& input : inputs) count += input.optional ? 0 : 1;
  return count;
}

int64_t OpDef::max_inputs() const {
  if (!inputs.empty() && inputs.back().variadic) return -1;
  return static_cast<int64_t>(inputs.size());
}

}  // namespace px

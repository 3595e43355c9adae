#include "support/op_samples.h"

namespace px::testing {

void PrintTo(const OpSample& sample, std::ostream* os) {
  *os << sample.op << "(";
  for (size_t i = 0; i < sample.inputs.size(); ++i) *os << (i ? ", " : "") << sample.inputs[i].meta_info().str();
  *os << ")" << sample.attrs.str();
  if (!sample.note.empty()) *os << " [" << sample.note << "]";
}

std::vector<OpSample> all_op_samples() {
  std::vector<OpSample> all;
  for (auto family :
       {elementwise_samples, reduction_samples, linalg_samples, nn_samples, shape_samples, factory_samples}) {
    for (OpSample& sample : family()) all.push_back(std::move(sample));
  }
  return all;
}

}  // namespace px::testing

#include "support/op_samples.h"

namespace px::testing {

std::vector<OpSample> all_op_samples() {
  std::vector<OpSample> all;
  for (auto family : {elementwise_samples, reduction_samples, linalg_samples, nn_samples, shape_samples,
                      factory_samples}) {
    for (OpSample& sample : family()) all.push_back(std::move(sample));
  }
  return all;
}

}  // namespace px::testing

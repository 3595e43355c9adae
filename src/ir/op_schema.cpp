#include "ir/op_schema.h"

#include "parallax/ops/dispatch.h"

namespace px::ir::detail {

Attrs complete_attrs(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  // The dispatcher's check works on tensors; meta tensors cost no storage.
  std::vector<Tensor> metas;
  metas.reserve(inputs.size());
  for (const TensorMeta& input : inputs) metas.push_back(Tensor::meta(input.shape, input.dtype));
  return check_call(op, metas, attrs);
}

}  // namespace px::ir::detail

#include "parallax/subclass/subclass.h"

#include "parallax/core/error.h"

namespace px {

const Tensor& SubclassState::at(std::string_view attribute) const {
  for (const auto& [name, tensor] : inner) {
    if (name == attribute) {
      if (!tensor.defined()) throw ValueError("subclass attribute '" + name + "' is absent");
      return tensor;
    }
  }
  throw ValueError("subclass state has no attribute '" + std::string(attribute) + "'");
}

bool SubclassState::has(std::string_view attribute) const {
  for (const auto& [name, tensor] : inner) {
    if (name == attribute) return tensor.defined();
  }
  return false;
}

Tensor make_subclass_tensor(std::shared_ptr<TensorSubclass> instance, TensorMeta meta) {
  if (!instance) throw ValueError("make_subclass_tensor: no subclass instance");
  auto impl = std::make_shared<TensorImpl>();
  impl->kind = TensorKind::Subclass;
  impl->strides = contiguous_strides(meta.shape);
  impl->meta = std::move(meta);
  impl->subclass = std::move(instance);
  return Tensor(std::move(impl));
}

std::shared_ptr<TensorSubclass> shared_subclass_of(const Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_subclass()) {
    throw ValueError("subclass_of: " + (tensor.defined() ? "a non-subclass tensor " + tensor.meta_info().str()
                                                         : std::string("an undefined tensor")));
  }
  // make_subclass_tensor and set_subclass_state are the only writers, and both store a TensorSubclass.
  auto instance = std::dynamic_pointer_cast<TensorSubclass>(tensor.subclass_instance());
  if (!instance) {
    throw ValueError("subclass_of: the tensor " + tensor.meta_info().str() + " holds a " +
                     tensor.subclass_instance()->type_name() + " that is not a TensorSubclass");
  }
  return instance;
}

TensorSubclass& subclass_of(const Tensor& tensor) { return *shared_subclass_of(tensor); }

void set_subclass_state(const Tensor& tensor, const SubclassState& state) {
  std::shared_ptr<TensorSubclass> next = subclass_of(tensor).unflatten(state);
  if (!next)
    throw ValueError("set_subclass_state: unflatten of " + subclass_of(tensor).type_name() + " returned nothing");
  tensor.impl()->subclass = std::move(next);
}

}  // namespace px

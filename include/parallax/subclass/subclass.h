#pragma once
// Tensor subclasses: user types that hold inner tensors and metadata and
// implement every op on themselves in a dispatch hook (DTensor is one).
//
// A px::Tensor holds a subclass instance through px::make_subclass_tensor; the
// tensor's shape and dtype are the subclass's outer (logical) ones. When any
// input of an op call is a subclass tensor, the dispatcher hands the whole call
// to the first such input's dispatch(), before any tracer or kernel: the hook
// typically unwraps inner tensors, calls ops on them (which trace, run on meta
// tensors or run kernels like any op) and wraps the results. Subclasses nest: an
// inner tensor may itself be a subclass tensor.
//
// The flatten contract, which capture relies on:
//   - flatten() returns every attribute that holds a tensor, by name, in a fixed
//     order; an attribute may be absent (an undefined Tensor); and a metadata
//     value (a px::Tree without tensors: comparable, hashable, printable) that
//     holds every other piece of state the hook depends on;
//   - unflatten(inner, metadata) builds a new instance of the same type from
//     exactly such a description (on any kind of inner tensors: dense, meta or
//     traced proxies).
// dispatch() may change the attributes of the subclass instances it is given
// (set, replace or clear an inner tensor; change the metadata). Capture detects
// such changes on its inputs, outputs them from the compiled graph and replays
// them on the caller's objects after every run, so compiled and eager behave the
// same. State kept OUTSIDE flatten() (a member flatten() does not report) cannot
// be tracked: capture neither sees nor replays changes to it.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ops/attrs.h"
#include "parallax/ops/op_def.h"
#include "parallax/pytree/tree.h"

namespace px {

// A subclass's state: inner tensors by attribute name (undefined = absent) and metadata.
struct SubclassState {
  std::vector<std::pair<std::string, Tensor>> inner;
  Tree metadata;

  // The inner tensor under `attribute`; ValueError naming the attribute when there is none.
  const Tensor& at(std::string_view attribute) const;
  bool has(std::string_view attribute) const;  // present (defined)
};

// The protocol: type_name() and dispatch() from SubclassHandle (core/tensor.h), which is all
// the dispatcher sees, plus the state that capture flattens, guards and rebuilds.
class TensorSubclass : public SubclassHandle {
 public:
  virtual SubclassState flatten() const = 0;
  // A new instance of this type from a state shaped like flatten()'s.
  virtual std::shared_ptr<TensorSubclass> unflatten(const SubclassState& state) const = 0;
};

// A tensor of outer shape and dtype `meta` holding `instance`.
Tensor make_subclass_tensor(std::shared_ptr<TensorSubclass> instance, TensorMeta meta);
// The instance a subclass tensor holds; ValueError for any other tensor.
TensorSubclass& subclass_of(const Tensor& tensor);
// The same, shared: what capture keeps to restore an instance the dispatch code replaced.
std::shared_ptr<TensorSubclass> shared_subclass_of(const Tensor& tensor);
// A subclass instance of type T, or nullptr when `tensor` holds none or another type.
template <class T>
T* subclass_as(const Tensor& tensor) {
  return tensor.is_subclass() ? dynamic_cast<T*>(tensor.subclass_instance().get()) : nullptr;
}
// Replaces the instance held by `tensor` (and so seen through every handle to it) with one
// built from `state`: how capture restores and replays attribute changes on a caller's object.
void set_subclass_state(const Tensor& tensor, const SubclassState& state);

}  // namespace px

#pragma once
// Guards: what a captured program assumed about its inputs. A program is
// valid for a call only if
//   - the inputs have the traced structure (the TreeSpec: dict keys, list
//     lengths, None versus a value);
//   - every non-tensor leaf has the traced value (it was baked into the graph);
//   - every tensor leaf has the traced dtype and shape, and every subclass tensor
//     the traced type, metadata, attribute presence and inner dtypes and shapes;
//   - every parameter and buffer slot still holds a tensor of the traced dtype
//     and shape (and tied slots still hold one tensor).
// A failure is described as `input [2] (has_compute): traced as true, called with false`.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "parallax/core/shape.h"
#include "parallax/pytree/tree.h"

namespace px {

namespace nn {
struct ParameterGroup;
}  // namespace nn

// What a subclass tensor looked like when traced: its type, metadata and, per attribute
// (in flatten order), presence and the inner tensor's dtype and shape (or, for a nested
// subclass, its own signature).
struct SubclassSignature {
  struct Attribute {
    std::string name;
    bool present = false;
    px::TensorMeta meta;
    std::vector<SubclassSignature> nested;  // empty, or one signature when the inner tensor is a subclass
    friend bool operator==(const Attribute&, const Attribute&) = default;
  };
  std::string type_name;
  Tree metadata;
  std::vector<Attribute> attributes;

  static SubclassSignature of(const Tensor& subclass_tensor);
  // `MaskingTensor(data: i64[6], mask: absent; {"lo": 0, "hi": 4, "state": "plain"})`.
  std::string str() const;
  friend bool operator==(const SubclassSignature&, const SubclassSignature&) = default;
};

struct LeafGuard {
  enum class Kind : uint8_t { Value, TensorMeta, Subclass };
  Kind kind = Kind::Value;
  KeyPath path;
  Tree value;                               // Value: the traced leaf
  px::TensorMeta meta;                      // TensorMeta, Subclass: the traced (outer) dtype and shape
  std::vector<SubclassSignature> subclass;  // Subclass: exactly one

  std::string str() const;  // `[1] == 3`, `[0] is f32[2,4]`
};

struct SlotGuard {
  std::vector<std::string> fqns;  // every name of one tensor (tied when more than one)
  std::vector<Tensor*> slots;     // the module's slots under those names (stable addresses)
  px::TensorMeta meta;
  std::vector<SubclassSignature> subclass;  // one for a subclass parameter or buffer
};

class Guards {
 public:
  Guards() = default;
  // The guards of a call with `inputs` (structure `spec`, `leaves` flattened) on a module
  // whose distinct parameters and buffers are `groups`. `input_names` name the top-level
  // inputs in messages (optional).
  Guards(TreeSpec spec, const std::vector<Tree>& leaves, const std::vector<nn::ParameterGroup>& groups,
         std::vector<std::string> input_names);

  const TreeSpec& spec() const { return spec_; }
  const std::vector<LeafGuard>& leaves() const { return leaves_; }
  const std::vector<SlotGuard>& slots() const { return slots_; }

  // The first failing guard for a call, described for a GuardError; nullopt if all hold.
  // `leaves` is filled with pointers to the leaves of `inputs` (no copies: this is the
  // hot path of every compiled call) when the structure matches.
  std::optional<std::string> check(const Tree& inputs, std::vector<const Tree*>& leaves) const;
  // One line per guard.
  std::string str() const;

 private:
  std::string describe_path(const KeyPath& path) const;  // `[2] (has_compute)`

  TreeSpec spec_;
  std::vector<LeafGuard> leaves_;
  std::vector<SlotGuard> slots_;
  std::vector<std::string> input_names_;
};

}  // namespace px

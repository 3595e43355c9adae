#pragma once
// Descriptors say what each graph input and output of a captured program is,
// so the planner, the lowering and the runtime never guess from positions:
//   inputs:  Param(fqn), Buffer(fqn), UserInput(key path), Tangent(output key path),
//            SubclassInner(owner, attribute): an inner tensor of a subclass input,
//            whose owner is a user input (its key path) or a Param/Buffer;
//   outputs: UserOutput(key path) (with the attribute for an inner tensor of a
//            subclass output), AttrMutation(owner, attribute): a tensor that the
//            subclass dispatch code set on an input, replayed on the caller's
//            object after each run; Grad(of: an input descriptor), or an explicit
//            none gradient (Grad(of: ..., none)) that has no graph output.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "parallax/pytree/tree.h"

namespace px {

struct InputDescriptor {
  enum class Kind : uint8_t { Param, Buffer, UserInput, Tangent, SubclassInner };
  Kind kind = Kind::UserInput;
  // SubclassInner: whose inner tensor this is (Param, Buffer or UserInput; the fields above and
  // below describe that owner), and the attribute ("scale"; "outer.inner" for nested subclasses).
  Kind owner = Kind::UserInput;
  std::string attribute;
  // Param, Buffer: every name of the tensor (more than one when tied); fqns[0] is canonical.
  std::vector<std::string> fqns;
  // UserInput: the leaf's key path in the inputs; Tangent: the key path of the output it seeds.
  KeyPath path;
  // UserInput: index of the leaf among the flattened inputs; Tangent: among the flattened outputs.
  size_t leaf = 0;

  static InputDescriptor param(std::vector<std::string> fqns);
  static InputDescriptor buffer(std::vector<std::string> fqns);
  static InputDescriptor user_input(KeyPath path, size_t leaf);
  static InputDescriptor tangent(KeyPath output_path, size_t output_leaf);
  // The inner tensor `attribute` of the subclass input `owner` (a Param, Buffer or UserInput descriptor).
  static InputDescriptor subclass_inner(const InputDescriptor& owner, std::string attribute);

  // A parameter or buffer itself (not a subclass's inner tensor): the model's state, which a
  // training step keeps and a checkpoint saves.
  bool is_param_or_buffer() const { return kind == Kind::Param || kind == Kind::Buffer; }
  // The kind seen through a subclass: an inner tensor answers with its owner's kind.
  Kind underlying_kind() const { return kind == Kind::SubclassInner ? owner : kind; }
  // A parameter or buffer, or an inner tensor of one: what lives for the whole step (the
  // planner's memory model) and is never a user's batch.
  bool is_model_state() const { return underlying_kind() == Kind::Param || underlying_kind() == Kind::Buffer; }

  // `Param(fc.weight)`, `Param(wte.weight, lm_head.weight)`, `UserInput([0])`, `Tangent([0])`,
  // `SubclassInner([1], mask)`, `SubclassInner(Param(w), scale)`.
  std::string str() const;
  friend bool operator==(const InputDescriptor&, const InputDescriptor&) = default;
};

struct OutputDescriptor {
  enum class Kind : uint8_t { UserOutput, Grad, AttrMutation };
  Kind kind = Kind::UserOutput;
  KeyPath path;                     // UserOutput: the leaf's key path in the outputs
  size_t leaf = 0;                  // UserOutput: index among the flattened outputs
  std::string attribute;            // UserOutput of a subclass output's inner tensor; AttrMutation
  std::vector<InputDescriptor> of;  // Grad: exactly one, the input differentiated; AttrMutation: the owner
  bool none = false;                // Grad: no gradient (no path to any output, or not differentiable)

  static OutputDescriptor user_output(KeyPath path, size_t leaf);
  static OutputDescriptor grad(InputDescriptor of, bool none = false);
  static OutputDescriptor user_output_inner(KeyPath path, size_t leaf, std::string attribute);
  // A tensor set on attribute `attribute` of the subclass input `owner` (Param, Buffer or UserInput).
  static OutputDescriptor attr_mutation(InputDescriptor owner, std::string attribute);

  // `UserOutput([0])`, `UserOutput([0], data)`, `Grad(of: Param(fc.weight))`,
  // `Grad(of: Buffer(mask), none)`, `AttrMutation([1], mask)`, `AttrMutation(Param(w), scale)`.
  std::string str() const;
  friend bool operator==(const OutputDescriptor&, const OutputDescriptor&) = default;
};

std::ostream& operator<<(std::ostream& os, const InputDescriptor& descriptor);
std::ostream& operator<<(std::ostream& os, const OutputDescriptor& descriptor);

}  // namespace px

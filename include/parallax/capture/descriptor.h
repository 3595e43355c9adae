#pragma once
// Descriptors say what each graph input and output of a captured program is,
// so the planner, the lowering and the runtime never guess from positions:
//   inputs:  Param(fqn), Buffer(fqn), UserInput(key path), Tangent(output key path)
//   outputs: UserOutput(key path), Grad(of: an input descriptor), or an explicit
//            none gradient (Grad(of: ..., none)) that has no graph output.

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "parallax/pytree/tree.h"

namespace px {

struct InputDescriptor {
  enum class Kind : uint8_t { Param, Buffer, UserInput, Tangent };
  Kind kind = Kind::UserInput;
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

  // `Param(fc.weight)`, `Param(wte.weight, lm_head.weight)`, `UserInput([0])`, `Tangent([0])`.
  std::string str() const;
  friend bool operator==(const InputDescriptor&, const InputDescriptor&) = default;
};

struct OutputDescriptor {
  enum class Kind : uint8_t { UserOutput, Grad };
  Kind kind = Kind::UserOutput;
  KeyPath path;                     // UserOutput: the leaf's key path in the outputs
  size_t leaf = 0;                  // UserOutput: index among the flattened outputs
  std::vector<InputDescriptor> of;  // Grad: exactly one, the input differentiated
  bool none = false;                // Grad: no gradient (no path to any output, or not differentiable)

  static OutputDescriptor user_output(KeyPath path, size_t leaf);
  static OutputDescriptor grad(InputDescriptor of, bool none = false);

  // `UserOutput([0])`, `Grad(of: Param(fc.weight))`, `Grad(of: Buffer(mask), none)`.
  std::string str() const;
  friend bool operator==(const OutputDescriptor&, const OutputDescriptor&) = default;
};

std::ostream& operator<<(std::ostream& os, const InputDescriptor& descriptor);
std::ostream& operator<<(std::ostream& os, const OutputDescriptor& descriptor);

}  // namespace px

#pragma once
// Provenance scopes: RAII markers of where op calls come from. Each thread has
// a stack of them; a tracer stamps every node it records with the innermost
// (module path, phase). Modules push their name when called, autodiff pushes
// the backward phase, so nodes say "layers.0.mlp, backward" without any
// plumbing through op calls.
//
//   { ProvenanceScope layer("layers.0");
//     { ProvenanceScope mlp("mlp");         // module path "layers.0.mlp"
//       y = px::matmul(x, w); } }           // recorded @ "layers.0.mlp" forward

#include <string_view>

#include "parallax/ir/graph.h"

namespace px::ir {

class ProvenanceScope {
 public:
  // Appends `module_name` to the module path ("a" then "b" gives "a.b").
  explicit ProvenanceScope(std::string_view module_name);
  // Keeps the module path, sets the phase.
  explicit ProvenanceScope(Phase phase);
  // Replaces both (e.g. backward nodes that take their forward node's path).
  explicit ProvenanceScope(Provenance provenance);
  ~ProvenanceScope();
  ProvenanceScope(const ProvenanceScope&) = delete;
  ProvenanceScope& operator=(const ProvenanceScope&) = delete;
};

// The innermost scope's provenance on this thread: empty path, forward, outside any scope.
Provenance current_provenance();

}  // namespace px::ir

#pragma once
// The generic passes. Every op is a pure function of its inputs and attributes
// (random ops carry their seed and offset as attributes), so both apply to any op.

#include <memory>
#include <string_view>
#include <vector>

#include "parallax/ir/pass.h"

namespace px::ir {

// Dead-code elimination: removes every node none of whose outputs reaches a
// graph output. Graph inputs stay, used or not (they are the graph's signature).
class DeadCodeElimination : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  PassResult run(Graph& graph, PassContext& context) const override;
};

// Common-subexpression elimination: a node with the same op, the same inputs
// and equal attributes as an earlier node is removed, and its uses read the
// earlier node's outputs. Repeats collapse in one run, since rewired inputs
// are compared.
class CommonSubexpressionElimination : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  PassResult run(Graph& graph, PassContext& context) const override;
};

// A built-in pass by name ("dce", "cse"); ValueError listing the known names otherwise.
std::unique_ptr<Pass> create_pass(std::string_view name);
std::vector<std::string_view> builtin_pass_names();

}  // namespace px::ir

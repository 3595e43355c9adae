#pragma once
// Parses the IR text format (grammar in printer.h) into a Graph.

#include <string_view>

#include "parallax/ir/graph.h"
#include "parallax/ops/registry.h"

namespace px::ir {

// Resolves op names in `registry`, which must outlive the graph. Throws
// px::ParseError with the line and column of the offending token for: bad
// syntax, an unknown op, an unknown or ill-typed attribute, a wrong number of
// inputs, an undefined or redefined value, a bad type, and a node whose written
// output types differ from what its op infers (or whose op rejects its inputs).
// Attributes left out take their defaults.
Graph parse(std::string_view text, const Registry& registry = builtin_registry());

// The same, but output types are taken as written: for tests that build graphs
// the verifier must reject.
Graph parse_unchecked(std::string_view text, const Registry& registry = builtin_registry());

}  // namespace px::ir

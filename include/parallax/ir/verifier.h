#pragma once
// The IR verifier: checks every invariant a pass or transform may rely on and
// reports ALL violations, each naming the node it concerns.
//
// Checks: SSA (each value defined once, by a graph input or a node output;
// every use after its definition; no dangling uses; graph outputs defined; no
// stale entries in the value table), every node's op, input count and
// attributes (valid and complete, in schema order), and every node's recorded
// output types equal to its op's inference.

#include <string>
#include <vector>

#include "parallax/ir/graph.h"

namespace px::ir {

// One line per violation, e.g. "%7 = add(%5, %6): inferred f32[4,8], recorded f32[4,9]".
// Empty when the graph is valid.
std::vector<std::string> verify_errors(const Graph& graph);

// Throws px::VerifyError listing every violation; `context` (e.g. "after pass 'cse'")
// leads the message when given.
void verify(const Graph& graph, const std::string& context = "");

}  // namespace px::ir

#pragma once
// A graph laid out for running, shared by the two loops that run graphs (ir::interpret and
// runtime::Executor): one slot per value that something reads, each node's input and output
// slots, and the slots each node is the last reader of, so that a run frees every value right
// after its last use. Also the checks both loops make on what goes in and comes out.

#include <cstdint>
#include <string>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ir/graph.h"

namespace px::ir {

struct Schedule {
  struct Step {
    std::vector<int64_t> inputs;   // slots read, in order
    std::vector<int64_t> outputs;  // slots written; -1 for an output nobody reads
    std::vector<int64_t> release;  // slots whose last reader this node is (distinct)
  };
  int64_t num_slots = 0;
  std::vector<int64_t> input_slots;   // per graph input; -1 when nothing reads it
  std::vector<int64_t> output_slots;  // per graph output
  std::vector<Step> steps;            // per node
};

// "<who>: graph '<name>'", the prefix of every error below.
std::string run_context(const Graph& graph, const std::string& who);

// ValueError naming `who` and the node for a node without an op, one that reads a value no input
// or earlier node defines, and a returned value nothing defines (run verify() to find why).
Schedule make_schedule(const Graph& graph, const std::string& who);

// ValueError naming `who` and the input: a wrong count, an undefined tensor, or a tensor whose
// shape or dtype differs from the graph input's.
void check_run_inputs(const Graph& graph, const std::vector<Tensor>& inputs, const std::string& who);
// ValueError naming `who` and the node when a node's results differ from its recorded types.
void check_node_results(const Graph& graph, const Node& node, const std::vector<Tensor>& results,
                        const std::string& who);

}  // namespace px::ir

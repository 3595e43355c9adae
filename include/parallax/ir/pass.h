#pragma once
// Graph passes and the pass manager.
//
// A pass rewrites a Graph in place. It keeps no state between runs (anything
// it learns lives in locals or in the PassContext), reads op facets and traits
// rather than op names, and reports whether it changed the graph. The pass
// manager runs a list of passes in order and, unless told otherwise, verifies
// the graph before the first pass and after each one, naming the pass that
// broke it: "VerifyError: after pass 'cse': graph 'g' has 1 error ...".

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parallax/ir/graph.h"

namespace px::ir {

struct PassResult {
  bool changed = false;
};

// Shared by the passes of one pipeline run: counters such as "dce.erased_nodes".
struct PassContext {
  std::map<std::string, int64_t> stats;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual PassResult run(Graph& graph, PassContext& context) const = 0;
};

class PassManager {
 public:
  PassManager& add(std::unique_ptr<Pass> pass);
  template <class P, class... Args>
  PassManager& add(Args&&... args) {
    return add(std::make_unique<P>(std::forward<Args>(args)...));
  }
  // Verification before the first pass and after each pass; on by default.
  PassManager& set_verify(bool verify) {
    verify_ = verify;
    return *this;
  }
  std::vector<std::string> pass_names() const;

  // Runs every pass once, in order; `changed` if any pass changed the graph.
  PassResult run(Graph& graph, PassContext& context) const;
  PassResult run(Graph& graph) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  bool verify_ = true;
};

}  // namespace px::ir

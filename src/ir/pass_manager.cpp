#include "parallax/ir/pass.h"
#include "parallax/ir/verifier.h"

namespace px::ir {

PassManager& PassManager::add(std::unique_ptr<Pass> pass) {
  PX_ASSERT(pass && "PassManager::add needs a pass");
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<std::string> PassManager::pass_names() const {
  std::vector<std::string> names;
  for (const auto& pass : passes_) names.emplace_back(pass->name());
  return names;
}

PassResult PassManager::run(Graph& graph, PassContext& context) const {
  if (verify_) verify(graph, "before the first pass");
  PassResult result;
  for (const auto& pass : passes_) {
    result.changed = pass->run(graph, context).changed || result.changed;
    if (verify_) verify(graph, "after pass '" + std::string(pass->name()) + "'");
  }
  return result;
}

PassResult PassManager::run(Graph& graph) const {
  PassContext context;
  return run(graph, context);
}

}  // namespace px::ir

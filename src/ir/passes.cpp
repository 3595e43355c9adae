#include "parallax/ir/passes.h"

#include "parallax/core/error.h"

namespace px::ir {

std::vector<std::string_view> builtin_pass_names() { return {"dce", "cse"}; }

std::unique_ptr<Pass> create_pass(std::string_view name) {
  if (name == "dce") return std::make_unique<DeadCodeElimination>();
  if (name == "cse") return std::make_unique<CommonSubexpressionElimination>();
  std::string known;
  for (std::string_view known_name : builtin_pass_names()) {
    known += (known.empty() ? "" : ", ") + std::string(known_name);
  }
  throw ValueError("no pass named '" + std::string(name) + "' (known passes: " + known + ")");
}

}  // namespace px::ir

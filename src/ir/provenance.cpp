#include "parallax/ir/provenance.h"

#include <vector>

namespace px::ir {

namespace {

// This thread's provenance stack; each entry is the full provenance in effect.
std::vector<Provenance>& provenance_stack() {
  thread_local std::vector<Provenance> stack;
  return stack;
}

}  // namespace

ProvenanceScope::ProvenanceScope(std::string_view module_name) {
  Provenance next = current_provenance();
  if (!next.module_path.empty() && !module_name.empty()) next.module_path += ".";
  next.module_path += module_name;
  provenance_stack().push_back(std::move(next));
}

ProvenanceScope::ProvenanceScope(Phase phase) {
  Provenance next = current_provenance();
  next.phase = phase;
  provenance_stack().push_back(std::move(next));
}

ProvenanceScope::ProvenanceScope(Provenance provenance) { provenance_stack().push_back(std::move(provenance)); }

ProvenanceScope::~ProvenanceScope() { provenance_stack().pop_back(); }

Provenance current_provenance() {
  const std::vector<Provenance>& stack = provenance_stack();
  return stack.empty() ? Provenance{} : stack.back();
}

}  // namespace px::ir

#include "parallax/capture/descriptor.h"

#include <ostream>

namespace px {

InputDescriptor InputDescriptor::param(std::vector<std::string> fqns) { return {Kind::Param, std::move(fqns), {}, 0}; }

InputDescriptor InputDescriptor::buffer(std::vector<std::string> fqns) {
  return {Kind::Buffer, std::move(fqns), {}, 0};
}

InputDescriptor InputDescriptor::user_input(KeyPath path, size_t leaf) {
  return {Kind::UserInput, {}, std::move(path), leaf};
}

InputDescriptor InputDescriptor::tangent(KeyPath output_path, size_t output_leaf) {
  return {Kind::Tangent, {}, std::move(output_path), output_leaf};
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// The root path prints as "" elsewhere; in a descriptor it reads better as "<root>".
std::string path_text(const KeyPath& path) { return path.entries.empty() ? "<root>" : path.str(); }

}  // namespace

std::string InputDescriptor::str() const {
  switch (kind) {
    case Kind::Param:
      return "Param(" + joined(fqns) + ")";
    case Kind::Buffer:
      return "Buffer(" + joined(fqns) + ")";
    case Kind::UserInput:
      return "UserInput(" + path_text(path) + ")";
    case Kind::Tangent:
      return "Tangent(" + path_text(path) + ")";
  }
  return "?";
}

OutputDescriptor OutputDescriptor::user_output(KeyPath path, size_t leaf) {
  return {Kind::UserOutput, std::move(path), leaf, {}, false};
}

OutputDescriptor OutputDescriptor::grad(InputDescriptor of, bool none) {
  return {Kind::Grad, {}, 0, {std::move(of)}, none};
}

std::string OutputDescriptor::str() const {
  if (kind == Kind::UserOutput) return "UserOutput(" + path_text(path) + ")";
  return "Grad(of: " + (of.empty() ? std::string("?") : of[0].str()) + (none ? ", none)" : ")");
}

std::ostream& operator<<(std::ostream& os, const InputDescriptor& descriptor) { return os << descriptor.str(); }
std::ostream& operator<<(std::ostream& os, const OutputDescriptor& descriptor) { return os << descriptor.str(); }

}  // namespace px

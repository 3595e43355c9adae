#include "parallax/capture/descriptor.h"

#include <ostream>

namespace px {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// How a subclass input's owner prints inside SubclassInner(...) and AttrMutation(...).
std::string owner_text(InputDescriptor::Kind owner, const std::vector<std::string>& fqns, const KeyPath& path) {
  switch (owner) {
    case InputDescriptor::Kind::Param:
      return "Param(" + joined(fqns) + ")";
    case InputDescriptor::Kind::Buffer:
      return "Buffer(" + joined(fqns) + ")";
    default:
      return path.str_or_root();
  }
}

}  // namespace

InputDescriptor InputDescriptor::param(std::vector<std::string> fqns) {
  InputDescriptor d;
  d.kind = Kind::Param;
  d.fqns = std::move(fqns);
  return d;
}

InputDescriptor InputDescriptor::buffer(std::vector<std::string> fqns) {
  InputDescriptor d = param(std::move(fqns));
  d.kind = Kind::Buffer;
  return d;
}

InputDescriptor InputDescriptor::user_input(KeyPath path, size_t leaf) {
  InputDescriptor d;
  d.kind = Kind::UserInput;
  d.path = std::move(path);
  d.leaf = leaf;
  return d;
}

InputDescriptor InputDescriptor::tangent(KeyPath output_path, size_t output_leaf) {
  InputDescriptor d = user_input(std::move(output_path), output_leaf);
  d.kind = Kind::Tangent;
  return d;
}

InputDescriptor InputDescriptor::subclass_inner(const InputDescriptor& owner, std::string attribute) {
  InputDescriptor d = owner;
  d.kind = Kind::SubclassInner;
  d.owner = owner.kind;
  d.attribute = std::move(attribute);
  return d;
}

std::string InputDescriptor::str() const {
  switch (kind) {
    case Kind::Param:
      return "Param(" + joined(fqns) + ")";
    case Kind::Buffer:
      return "Buffer(" + joined(fqns) + ")";
    case Kind::UserInput:
      return "UserInput(" + path.str_or_root() + ")";
    case Kind::Tangent:
      return "Tangent(" + path.str_or_root() + ")";
    case Kind::SubclassInner:
      return "SubclassInner(" + owner_text(owner, fqns, path) + ", " + attribute + ")";
  }
  return "?";
}

OutputDescriptor OutputDescriptor::user_output(KeyPath path, size_t leaf) {
  OutputDescriptor d;
  d.kind = Kind::UserOutput;
  d.path = std::move(path);
  d.leaf = leaf;
  return d;
}

OutputDescriptor OutputDescriptor::user_output_inner(KeyPath path, size_t leaf, std::string attribute) {
  OutputDescriptor d = user_output(std::move(path), leaf);
  d.attribute = std::move(attribute);
  return d;
}

OutputDescriptor OutputDescriptor::grad(InputDescriptor of, bool none) {
  OutputDescriptor d;
  d.kind = Kind::Grad;
  d.of = {std::move(of)};
  d.none = none;
  return d;
}

OutputDescriptor OutputDescriptor::attr_mutation(InputDescriptor owner, std::string attribute) {
  OutputDescriptor d;
  d.kind = Kind::AttrMutation;
  d.of = {std::move(owner)};
  d.attribute = std::move(attribute);
  return d;
}

std::string OutputDescriptor::str() const {
  switch (kind) {
    case Kind::UserOutput:
      return "UserOutput(" + path.str_or_root() + (attribute.empty() ? "" : ", " + attribute) + ")";
    case Kind::AttrMutation: {
      const InputDescriptor& owner = of.at(0);
      return "AttrMutation(" + owner_text(owner.kind, owner.fqns, owner.path) + ", " + attribute + ")";
    }
    case Kind::Grad:
      break;
  }
  return "Grad(of: " + (of.empty() ? std::string("?") : of[0].str()) + (none ? ", none)" : ")");
}

std::ostream& operator<<(std::ostream& os, const InputDescriptor& descriptor) { return os << descriptor.str(); }
std::ostream& operator<<(std::ostream& os, const OutputDescriptor& descriptor) { return os << descriptor.str(); }

}  // namespace px

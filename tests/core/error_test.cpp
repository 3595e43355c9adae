// px::Error's parts: kind() and message() apart, context added without losing the class, and an
// error reported by kind name (from another rank) raised as its class.

#include "parallax/core/error.h"

#include <gtest/gtest.h>

#include <functional>
#include <typeinfo>

namespace px {
namespace {

// The dynamic type and message of what `fn` throws.
struct Caught {
  std::string type, what, kind, message;
};
Caught caught(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& error) {
    return {typeid(error).name(), error.what(), error.kind(), error.message()};
  }
  ADD_FAILURE() << "nothing thrown";
  return {};
}

TEST(Errors, KindAndMessageApart) {
  const ValueError error("split: dim 3 out of range");
  EXPECT_STREQ(error.what(), "ValueError: split: dim 3 out of range");
  EXPECT_EQ(error.kind(), "ValueError");
  EXPECT_EQ(error.message(), "split: dim 3 out of range");
  const Error plain("something");
  EXPECT_STREQ(plain.what(), "something");
  EXPECT_EQ(plain.kind(), "");
  EXPECT_EQ(plain.message(), "something");
}

TEST(Errors, ContextKeepsTheClass) {
  const Caught shape = caught([] { ShapeError("matmul: [2,3] @ [4,5]").rethrow_with_context("lower: rank 1: "); });
  EXPECT_EQ(shape.type, typeid(ShapeError).name());
  EXPECT_EQ(shape.what, "ShapeError: lower: rank 1: matmul: [2,3] @ [4,5]");
  const Caught infeasible = caught([] { InfeasiblePlan("memory budget").rethrow_with_context("plan: "); });
  EXPECT_EQ(infeasible.type, typeid(InfeasiblePlan).name());
  EXPECT_EQ(infeasible.message, "plan: memory budget");

  try {
    ParseError("expected ':'", 3, 7).rethrow_with_context("graph.txt: ");
    FAIL() << "nothing thrown";
  } catch (const ParseError& error) {
    EXPECT_EQ(error.line(), 3);
    EXPECT_EQ(error.column(), 7);
    EXPECT_STREQ(error.what(), "ParseError at 3:7: graph.txt: expected ':'");
    EXPECT_EQ(error.detail(), "graph.txt: expected ':'");
  }
}

TEST(Errors, RaisedByKindAsTheirClass) {
  const std::pair<const char*, const char*> kinds[] = {
      {"ShapeError", typeid(ShapeError).name()},         {"DTypeError", typeid(DTypeError).name()},
      {"ValueError", typeid(ValueError).name()},         {"UnsupportedOp", typeid(UnsupportedOp).name()},
      {"VerifyError", typeid(VerifyError).name()},       {"GuardError", typeid(GuardError).name()},
      {"TraceError", typeid(TraceError).name()},         {"CommError", typeid(CommError).name()},
      {"InfeasiblePlan", typeid(InfeasiblePlan).name()},
  };
  for (const auto& [kind, type] : kinds) {
    const Caught raised = caught([kind = kind] { throw_error_of_kind(kind, "rank 0: bad"); });
    EXPECT_EQ(raised.type, type) << kind;
    EXPECT_EQ(raised.kind, kind);
    EXPECT_EQ(raised.message, "rank 0: bad");
  }
  const Caught unknown = caught([] { throw_error_of_kind("BadAlloc", "rank 0: out of memory"); });
  EXPECT_EQ(unknown.type, typeid(Error).name());
  EXPECT_EQ(unknown.what, "BadAlloc: rank 0: out of memory");
  const Caught none = caught([] { throw_error_of_kind("", "rank 0: failed"); });
  EXPECT_EQ(none.what, "rank 0: failed");
}

}  // namespace
}  // namespace px

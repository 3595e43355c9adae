// The typed op handles (ops/op_handles.h) cover the registry exactly, and each resolves to the
// registry's own OpDef: a new op without a handle, or a handle without an op, fails here.

#include "parallax/ops/op_handles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "parallax/ops/dispatch.h"
#include "parallax/ops/factory.h"

namespace px {
namespace {

TEST(OpHandles, CoverTheRegistryExactly) {
  std::vector<std::string> handles(std::begin(op::kBuiltinOpNames), std::end(op::kBuiltinOpNames));
  std::sort(handles.begin(), handles.end());
  EXPECT_EQ(handles, builtin_registry().names());  // names() is sorted
}

TEST(OpHandles, ResolveToTheRegistrysOps) {
#define PX_EXPECT_HANDLE(name) EXPECT_EQ(&op::name(), &builtin_registry().get(#name)) << #name;
  PX_BUILTIN_OPS(PX_EXPECT_HANDLE)
#undef PX_EXPECT_HANDLE
}

TEST(OpHandles, CallThroughAHandle) {
  const Tensor x = px::full({2, 3}, 2.0, DType::Float64);
  const Tensor y = call1(op::mul(), {x, x});
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(y.contiguous().data<double>()[0], 4.0);
  // The by-name form stays for names that arrive as data, and names what is missing.
  EXPECT_THROW(call1("mull", {x, x}), UnsupportedOp);
}

}  // namespace
}  // namespace px

#pragma once
// The dispatcher routes an op call, in this order:
//   1. subclass hook   - if an input is a subclass tensor, its SubclassHandle::dispatch (core/tensor.h;
//                        the subclass layer implements it, the dispatcher knows only the handle);
//   2. interceptor     - the innermost DispatchInterceptor installed on this thread (a tracer);
//   3. meta inference  - if any input is meta (or the call asks for meta outputs);
//   4. CPU kernel.
// Before any of them it checks the inputs and attributes against the op's schema
// and fills attribute defaults, so every layer sees a well-formed call.

#include <string_view>
#include <vector>

#include "parallax/ops/op_def.h"
#include "parallax/ops/registry.h"

namespace px {

// Something that takes over op calls on this thread while installed (a tracer
// records them into a graph). It may call `redispatch` to run the op below itself.
class DispatchInterceptor {
 public:
  virtual ~DispatchInterceptor() = default;
  virtual std::vector<Tensor> intercept(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) = 0;
};

// Installs an interceptor on this thread for the scope's lifetime (RAII; also on throw).
class InterceptScope {
 public:
  explicit InterceptScope(DispatchInterceptor& interceptor);
  ~InterceptScope();
  InterceptScope(const InterceptScope&) = delete;
  InterceptScope& operator=(const InterceptScope&) = delete;
};

// Hides this thread's interceptors while it lives (RAII): for shape-only work on meta tensors
// that must not be recorded into an active trace (checking a sharding strategy, say).
class SuspendInterceptScope {
 public:
  SuspendInterceptScope();
  ~SuspendInterceptScope();
  SuspendInterceptScope(const SuspendInterceptScope&) = delete;
  SuspendInterceptScope& operator=(const SuspendInterceptScope&) = delete;
};

struct CallOptions {
  bool meta = false;  // produce meta outputs even with no meta inputs (factories on meta)
};

// Checks inputs and attributes against the schema; returns attributes with defaults filled.
Attrs check_call(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

std::vector<Tensor> call(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                         CallOptions options = {});
std::vector<Tensor> call(std::string_view op_name, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
                         CallOptions options = {});
// Convenience for single-output ops. Code calls ops through their handles (ops/op_handles.h:
// `call1(op::matmul(), ...)`); the by-name forms are for names that arrive as data (IR text).
Tensor call1(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}, CallOptions options = {});
Tensor call1(std::string_view op_name, const std::vector<Tensor>& inputs, const Attrs& attrs = {},
             CallOptions options = {});

// Runs `op` skipping the current interceptor (and any outer ones): meta inference or the kernel.
std::vector<Tensor> redispatch(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                               CallOptions options = {});

// Output metas for `op` on these input metas (checks the schema too).
std::vector<TensorMeta> infer_metas(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs);

// The VJP facet, or UnsupportedOp naming the op.
const VjpFn& vjp_of(const OpDef& op);
// The sharding facet, or UnsupportedOp naming the op.
const ShardingRuleFn& sharding_rule_of(const OpDef& op);

}  // namespace px

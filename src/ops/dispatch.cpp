#include "parallax/ops/dispatch.h"

#include <algorithm>

#include "parallax/core/error.h"

namespace px {

namespace {

// This thread's installed interceptors, innermost last. `suspended` hides them
// while an op runs below them (redispatch), so kernels that call ops are not traced.
struct InterceptorStack {
  std::vector<DispatchInterceptor*> scopes;
  int suspended = 0;
};

InterceptorStack& interceptor_stack() {
  thread_local InterceptorStack stack;
  return stack;
}

using SuspendInterceptors = SuspendInterceptScope;

std::vector<TensorMeta> metas_of(const std::vector<Tensor>& inputs) {
  std::vector<TensorMeta> metas;
  metas.reserve(inputs.size());
  for (const Tensor& input : inputs) metas.push_back(input.meta_info());
  return metas;
}

void check_input_count(const OpDef& op, size_t count) {
  auto given = static_cast<int64_t>(count);
  int64_t max = op.max_inputs();
  if (given < op.min_inputs() || (max >= 0 && given > max)) {
    std::string expected = max < 0                  ? "at least " + std::to_string(op.min_inputs())
                           : op.min_inputs() == max ? std::to_string(max)
                                                    : std::to_string(op.min_inputs()) + " to " + std::to_string(max);
    throw ValueError(op.name + ": expected " + expected + " tensor inputs, got " + std::to_string(given) + " (" +
                     op.signature() + ")");
  }
}

Attrs check_attrs(const OpDef& op, const Attrs& attrs) {
  for (const auto& [name, value] : attrs.items()) {
    auto spec = std::find_if(op.attrs.begin(), op.attrs.end(), [&](const AttrSpec& s) { return s.name == name; });
    if (spec == op.attrs.end()) {
      throw ValueError(op.name + ": unknown attribute '" + name + "' (" + op.signature() + ")");
    }
    if (!attr_matches(spec->type, value)) {
      throw ValueError(op.name + ": attribute '" + name + "' expects " + std::string(attr_type_name(spec->type)) +
                       ", got " + attr_value_str(value));
    }
  }
  Attrs filled;
  for (const AttrSpec& spec : op.attrs) {
    if (attrs.has(spec.name)) {
      const AttrValue& value = attrs.get(spec.name);
      // Store Float attributes as double even when given as an int, so kernels read one type.
      if (spec.type == AttrType::Float && std::holds_alternative<int64_t>(value)) {
        filled.set(spec.name, static_cast<double>(std::get<int64_t>(value)));
      } else {
        filled.set(spec.name, value);
      }
    } else if (spec.default_value) {
      filled.set(spec.name, *spec.default_value);
    } else {
      throw ValueError(op.name + ": missing required attribute '" + spec.name + "' (" + op.signature() + ")");
    }
  }
  return filled;
}

std::vector<Tensor> run_below_interceptors(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                                           CallOptions options) {
  bool any_meta = options.meta;
  for (const Tensor& input : inputs) {
    if (input.is_proxy()) {
      throw ValueError(op.name + ": got a traced proxy tensor " + input.meta_info().str() +
                       " outside the trace that made it");
    }
    if (input.is_subclass()) {
      throw ValueError(op.name + ": got a subclass tensor (" + input.subclass_instance()->type_name() + ", " +
                       input.meta_info().str() + ") below the subclass hook; its dispatch must call ops on " +
                       "inner tensors");
    }
    any_meta = any_meta || input.is_meta();
  }
  std::vector<TensorMeta> out_metas = op.infer(metas_of(inputs), attrs);
  if (any_meta) {
    std::vector<Tensor> outputs;
    outputs.reserve(out_metas.size());
    for (TensorMeta& meta : out_metas) outputs.push_back(Tensor::meta(std::move(meta.shape), meta.dtype));
    return outputs;
  }
  SuspendInterceptors suspend;
  std::vector<Tensor> outputs = op.kernel(inputs, attrs);
#ifndef NDEBUG
  PX_ASSERT(outputs.size() == out_metas.size() && "kernel output count differs from inference");
  for (size_t i = 0; i < outputs.size(); ++i) {
    PX_ASSERT(outputs[i].meta_info() == out_metas[i] && "kernel output meta differs from inference");
  }
#endif
  return outputs;
}

}  // namespace

SuspendInterceptScope::SuspendInterceptScope() { ++interceptor_stack().suspended; }
SuspendInterceptScope::~SuspendInterceptScope() { --interceptor_stack().suspended; }

InterceptScope::InterceptScope(DispatchInterceptor& interceptor) { interceptor_stack().scopes.push_back(&interceptor); }

InterceptScope::~InterceptScope() { interceptor_stack().scopes.pop_back(); }

Attrs check_call(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  check_input_count(op, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ValueError(op.name + ": input " + std::to_string(i) + " is an undefined tensor (" + op.signature() + ")");
    }
  }
  return check_attrs(op, attrs);
}

std::vector<Tensor> call(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs, CallOptions options) {
  Attrs filled = check_call(op, inputs, attrs);
  // 1. Subclass hook: the first subclass input implements the op (it may trace, run meta or kernels below).
  for (const Tensor& input : inputs) {
    if (input.is_subclass()) return input.subclass_instance()->dispatch(op, inputs, filled);
  }
  InterceptorStack& stack = interceptor_stack();
  if (!stack.scopes.empty() && stack.suspended == 0) {
    return stack.scopes.back()->intercept(op, inputs, filled);
  }
  return run_below_interceptors(op, inputs, filled, options);
}

std::vector<Tensor> call(std::string_view op_name, const std::vector<Tensor>& inputs, const Attrs& attrs,
                         CallOptions options) {
  return call(builtin_registry().get(op_name), inputs, attrs, options);
}

Tensor call1(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs, CallOptions options) {
  std::vector<Tensor> outputs = call(op, inputs, attrs, options);
  if (outputs.size() != 1) {
    throw ValueError(op.name + " returns " + std::to_string(outputs.size()) + " tensors; call() returns them all");
  }
  return outputs[0];
}

Tensor call1(std::string_view op_name, const std::vector<Tensor>& inputs, const Attrs& attrs, CallOptions options) {
  return call1(builtin_registry().get(op_name), inputs, attrs, options);
}

std::vector<Tensor> redispatch(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                               CallOptions options) {
  return run_below_interceptors(op, inputs, check_call(op, inputs, attrs), options);
}

std::vector<TensorMeta> infer_metas(const OpDef& op, const std::vector<TensorMeta>& inputs, const Attrs& attrs) {
  std::vector<Tensor> metas;
  metas.reserve(inputs.size());
  for (const TensorMeta& meta : inputs) metas.push_back(Tensor::meta(meta.shape, meta.dtype));
  return op.infer(inputs, check_call(op, metas, attrs));
}

const VjpFn& vjp_of(const OpDef& op) {
  if (!op.vjp) throw UnsupportedOp("op '" + op.name + "' is not differentiable (it has no VJP)");
  return op.vjp;
}

const ShardingRuleFn& sharding_rule_of(const OpDef& op) {
  if (!op.sharding) throw UnsupportedOp("no sharding rule for op '" + op.name + "'");
  return op.sharding;
}

}  // namespace px

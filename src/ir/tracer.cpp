#include "parallax/ir/tracer.h"

#include "parallax/core/error.h"
#include "parallax/ir/provenance.h"
#include "parallax/ir/verifier.h"

namespace px::ir {

struct Tracer::State {
  std::string name;  // kept apart: finish() moves the graph out
  Graph graph;
  bool finished = false;
};

namespace {

// What a proxy of a trace holds: which trace (weakly, so a proxy that outlives
// its tracer is merely foreign, never dangling) and which value.
class TracedValue : public ProxyHandle {
 public:
  TracedValue(std::weak_ptr<const void> owner, ValueId id) : owner_(std::move(owner)), id_(id) {}
  bool belongs_to(const void* trace) const {
    std::shared_ptr<const void> owner = owner_.lock();
    return owner && owner.get() == trace;
  }
  ValueId id() const { return id_; }
  [[noreturn]] void value_read(std::string_view what, const TensorMeta& meta) const override {
    Provenance where = current_provenance();
    std::string module = where.module_path.empty() ? "at the top level" : "in module '" + where.module_path + "'";
    throw TraceError(std::string(what) + " reads the value of traced tensor %" + std::to_string(id_) + " (" +
                     meta.str() + ") " + module + ": a trace records no values, so data-dependent control " +
                     "flow cannot be captured; compute with ops instead (e.g. px::where for a branch)");
  }

 private:
  std::weak_ptr<const void> owner_;
  ValueId id_;
};

// What a tensor that this trace cannot use is, for error messages.
std::string foreign_description(const Tensor& tensor) {
  std::string meta = tensor.meta_info().str();
  switch (tensor.kind()) {
    case TensorKind::Dense:
      return "a concrete tensor " + meta + " not produced in this trace";
    case TensorKind::Meta:
      return "a meta tensor " + meta + " not produced in this trace";
    case TensorKind::Proxy:
      return "a proxy " + meta + " of another trace";
    case TensorKind::Subclass:
      return "a subclass tensor " + meta + " that its dispatch did not unwrap";
  }
  return "a tensor " + meta + " not produced in this trace";
}

}  // namespace

Tracer::Tracer(std::string graph_name) : state_(std::make_shared<State>()) {
  state_->name = graph_name;
  state_->graph.set_name(std::move(graph_name));
}

Tracer::~Tracer() = default;

void Tracer::check_active(std::string_view what) const {
  if (state_->finished) {
    throw ValueError(std::string(what) + ": the trace of graph '" + state_->name + "' is finished; start a new Tracer");
  }
}

Tensor Tracer::make_proxy(ValueId id) const {
  auto handle = std::make_shared<TracedValue>(std::weak_ptr<const void>(state_), id);
  return Tensor::proxy(state_->graph.meta(id), std::move(handle));
}

Tensor Tracer::add_input(std::string name, TensorMeta meta) {
  check_active("add_input");
  return make_proxy(state_->graph.add_input(std::move(name), std::move(meta)));
}

bool Tracer::owns(const Tensor& tensor) const {
  if (!tensor.defined() || !tensor.is_proxy()) return false;
  const auto* traced = dynamic_cast<const TracedValue*>(tensor.proxy_handle().get());
  return traced && traced->belongs_to(state_.get());
}

ValueId Tracer::value_of(const Tensor& tensor, const std::string& role) const {
  if (!tensor.defined()) throw ValueError(role + " is an undefined tensor");
  if (!owns(tensor)) {
    throw ValueError(role + " is " + foreign_description(tensor) + "; make it a graph input");
  }
  return static_cast<const TracedValue&>(*tensor.proxy_handle()).id();
}

ValueId Tracer::value_of(const Tensor& proxy) const { return value_of(proxy, "the tensor"); }

std::vector<Tensor> Tracer::intercept(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  check_active(op.name);
  std::vector<ValueId> ids;
  ids.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ids.push_back(value_of(inputs[i], "input " + std::to_string(i) + " of " + op.name));
  }
  std::vector<ValueId> outputs = state_->graph.add_node(op, std::move(ids), attrs, current_provenance());
  std::vector<Tensor> proxies;
  proxies.reserve(outputs.size());
  for (ValueId output : outputs) proxies.push_back(make_proxy(output));
  return proxies;
}

void Tracer::set_outputs(const std::vector<Tensor>& outputs) {
  check_active("set_outputs");
  std::vector<ValueId> ids;
  ids.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) ids.push_back(value_of(outputs[i], "output " + std::to_string(i)));
  state_->graph.set_outputs(std::move(ids));
}

void Tracer::set_name(const Tensor& proxy, std::string name) {
  check_active("set_name");
  state_->graph.value(value_of(proxy)).name = std::move(name);
}

const Graph& Tracer::graph() const { return state_->graph; }

Graph Tracer::finish() {
  check_active("finish");
  verify(state_->graph, "at the end of tracing");
  state_->finished = true;
  return std::move(state_->graph);
}

}  // namespace px::ir

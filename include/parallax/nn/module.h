#pragma once
// px::nn::Module: a tree of submodules that own parameters and buffers.
//
// Every parameter and buffer lives in a slot of the module that registered it;
// its fully-qualified name (FQN) is the path of local names from the root,
// `layers.3.attn.wq.weight`. Layers keep a pointer to their slots and read them
// at every forward, so capture can put traced proxies into the slots for the
// duration of a trace and an optimizer can put updated tensors in.
//
// Modules are built on meta tensors: registering a parameter records its shape,
// dtype and initializer and allocates nothing, so a LLaMA-3-8B-shaped model
// constructs instantly. materialize(seed) then draws every parameter from a
// counter-based generator keyed by (seed, FQN): the values do not depend on the
// order of construction, and any shard can be drawn on its own.
//
// Tied parameters are one tensor in two slots (GPT-2's lm_head.weight is
// wte.weight): named_parameters() lists the tensor under both names, and
// parameter_groups() gives it once with both names.
//
// A layer derives from ModuleBase<Layer> and defines `forward` with any
// signature; calling it as `layer(args...)` runs forward inside a provenance
// scope naming the module, so traced nodes know which module they came from.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ir/provenance.h"

namespace px::nn {

// How materialize() fills a parameter or buffer.
struct Init {
  enum class Kind : uint8_t { Zeros, Ones, Constant, Normal, Uniform, Given };
  Kind kind = Kind::Zeros;
  double a = 0.0;  // constant value; normal mean; uniform low
  double b = 0.0;  // normal stddev; uniform high

  static Init zeros() { return {Kind::Zeros}; }
  static Init ones() { return {Kind::Ones}; }
  static Init constant(double value) { return {Kind::Constant, value}; }
  static Init normal(double mean, double stddev) { return {Kind::Normal, mean, stddev}; }
  static Init uniform(double low, double high) { return {Kind::Uniform, low, high}; }
  // The slot was registered with concrete values; materialize() leaves it alone.
  static Init given() { return {Kind::Given}; }
};

// The Philox key of the values of the tensor named `fqn` under `seed`: FNV-1a of the
// name, mixed with the seed through splitmix64. materialize() draws element i (row-major)
// of that tensor as init_value(init, key, i), so any shard can be drawn on its own.
uint64_t init_stream_key(uint64_t seed, std::string_view fqn);
// Element `index` of a tensor initialized by `init` from the stream `key`
// (normal: mean + stddev * philox_normal(key, 0, index); uniform: low + (high - low) *
// philox_uniform(key, 0, index)). ValueError for Init::given(), which has no values.
double init_value(const Init& init, uint64_t key, uint64_t index);

enum class SlotKind : uint8_t { Parameter, Buffer };

// One parameter or buffer slot, seen from the root.
struct SlotRef {
  std::string fqn;
  SlotKind kind = SlotKind::Parameter;
  Tensor* tensor = nullptr;  // the slot itself: assigning to it replaces the module's tensor
  Init init;
};

// A distinct tensor and every name it is registered under (more than one when tied).
struct ParameterGroup {
  std::vector<std::string> fqns;  // in slot order; fqns[0] is the canonical name
  SlotKind kind = SlotKind::Parameter;
  Tensor tensor;
  std::vector<Tensor*> slots;  // one per fqn
};

class Module {
 public:
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // This module's name under its parent ("" for a root). Set by register_module.
  const std::string& name() const { return name_; }

  // This module (path "") and every descendant, depth first in registration order.
  std::vector<std::pair<std::string, Module*>> named_modules();
  // Every parameter (buffer) slot by FQN, in a stable order: a module's own slots in
  // registration order, then each submodule's in registration order. Tied tensors
  // appear once per name.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  // Every parameter slot, then every buffer slot, in the order above.
  std::vector<SlotRef> slots();
  // Distinct tensors (by identity): parameters first, then buffers, each with all its names.
  std::vector<ParameterGroup> parameter_groups();
  // The slot under `fqn`; ValueError naming the FQN (and the closest names) when absent.
  Tensor& slot(std::string_view fqn);

  // Total elements over distinct parameters (tied ones counted once).
  int64_t num_parameters() const;
  // True when any parameter or buffer is a meta tensor.
  bool is_meta() const;
  // Replaces every meta parameter and buffer with dense values drawn from its Init with a
  // generator keyed by (seed, FQN of its first name); tied slots stay tied. Slots registered
  // with concrete values are left alone.
  void materialize(uint64_t seed);

 protected:
  Module() = default;
  // A parameter of `shape` and `dtype`, as a meta tensor until materialize(). Returns the slot;
  // its address stays valid for the module's lifetime. ValueError on a duplicate or dotted name.
  Tensor& register_parameter(std::string name, Shape shape, Init init, DType dtype = DType::Float32);
  // A parameter with given values (dense or meta); `value` may be another slot's tensor (tying).
  Tensor& register_parameter(std::string name, Tensor value);
  Tensor& register_buffer(std::string name, Shape shape, Init init, DType dtype = DType::Float32);
  Tensor& register_buffer(std::string name, Tensor value);
  // Adopts `module` as a child named `name` and returns it.
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    adopt(name, module);
    return module;
  }

 private:
  struct Slot {
    std::string name;
    SlotKind kind;
    Tensor tensor;
    Init init;
  };
  Tensor& add_slot(std::string name, SlotKind kind, Tensor tensor, Init init);
  void adopt(const std::string& name, std::shared_ptr<Module> module);
  void collect_slots(const std::string& prefix, std::vector<SlotRef>& out, SlotKind kind);
  // Read-only twin of collect_slots: the tensors by FQN.
  void collect_tensors(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out,
                       SlotKind kind) const;
  // True when `target` is this module or one of its descendants.
  bool contains(const Module* target) const;

  std::string name_;
  std::deque<Slot> slots_;  // a deque: slot addresses stay valid as slots are added
  std::vector<std::shared_ptr<Module>> children_;
};

// Runs forward inside a provenance scope named after the module (nothing for a root).
class ModuleScope {
 public:
  explicit ModuleScope(const Module& module);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  std::unique_ptr<ir::ProvenanceScope> scope_;
};

template <class Derived>
class ModuleBase : public Module {
 public:
  // Constrained on forward accepting the arguments, so that overload resolution (and
  // std::function) can ask whether a module is callable with them without a hard error.
  template <class... Args>
  requires requires(Derived& self, Args&&... args) { self.forward(std::forward<Args>(args)...); }
  decltype(auto) operator()(Args&&... args) {
    ModuleScope scope(*this);
    return static_cast<Derived&>(*this).forward(std::forward<Args>(args)...);
  }
};

}  // namespace px::nn

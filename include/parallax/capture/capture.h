#pragma once
// px::capture: trace a module's forward (or any callable) on its example inputs
// into a graph, and get back a program that runs that graph on new inputs.
//
//   auto program = px::capture(model, std::make_tuple(x, int64_t{4}, true),
//                              {.input_names = {"x", "input_dim", "has_compute"}});
//   px::Tree out = program(x2, int64_t{4}, true);        // guards, run, unflatten
//   auto [y, shape] = program.call<std::tuple<px::Tensor, px::Shape>>(x2, int64_t{4}, true);
//
// What capture does:
//   - flattens the example inputs (a tuple of the forward's arguments) into leaves;
//   - makes every parameter and buffer of the module a graph input (used or not; a
//     tied tensor once, with all its names), then every tensor leaf of the inputs;
//   - puts traced proxies into the module's slots and the inputs, runs forward under
//     a tracer, and puts the module's tensors back (also when forward throws);
//   - drops user tensor inputs that the graph never reads;
//   - sorts the output leaves: graph outputs (tensors computed in the graph or
//     parameters), pass-throughs (an input tensor returned as is: the caller gets back
//     its own handle), and constants (non-tensor leaves, tensors from outside the
//     trace), so that only tensors computed in the graph are graph outputs;
//   - records guards (guards.h) on everything the trace assumed.
//
// Subclass inputs (subclass/subclass.h), user inputs and parameters alike, are desugared:
// each present inner tensor becomes a graph input (SubclassInner descriptor) and forward
// sees a twin instance built by unflatten over the traced inner tensors. Whatever the
// dispatch code does to a twin's attributes (set, replace, clear, change the metadata) is
// diffed against the twin's starting state and recorded as an AttrMutation; a tensor
// computed in the graph becomes an extra graph output. The caller's objects are never
// touched by capture (they are snapshotted and restored, also when forward throws); the
// epilogue of every run applies the mutations to them. Subclass outputs are rebuilt by
// unflatten with the metadata decided at capture. Nested subclasses are desugared
// recursively and mutations are tracked at every level (`AttrMutation([1], inner.scale)`).
//
// Non-tensor inputs (ints, doubles, bools, strings) reach forward as plain values,
// so whatever forward computes from them is baked into the graph; the guards make a
// later call with another value fail (GuardError) or, with
// `on_guard_failure = Recompile`, capture again. The programs live in a cache owned by
// the CapturedProgram (bounded: `cache_size`); nothing is process-wide.
//
// The module must outlive the program: calls read its slots (so an optimizer that
// replaces parameter tensors is seen by the next call). A program is not safe to call
// from two threads at once (a recompile changes its cache); give each thread its own.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "parallax/capture/descriptor.h"
#include "parallax/capture/guards.h"
#include "parallax/core/mixed_precision.h"
#include "parallax/ir/graph.h"
#include "parallax/nn/module.h"
#include "parallax/pytree/convert.h"
#include "parallax/subclass/subclass.h"

namespace px {

struct CaptureOptions {
  enum class OnGuardFailure : uint8_t { Raise, Recompile };
  std::string name = "captured";         // the graph's name
  std::vector<std::string> input_names;  // names of the top-level inputs, for messages and IR names
  OnGuardFailure on_guard_failure = OnGuardFailure::Raise;
  size_t cache_size = 8;  // programs kept under Recompile; a call needing one more raises GuardError
  // Floating parameters and input tensors reach forward cast to precision.param_dtype (one cast
  // node per parameter, stamped with the parameter's module path, so it clusters with its layer),
  // and floating outputs leave cast to precision.output_dtype. The graph's inputs keep their dtypes.
  MixedPrecisionPolicy precision;
};

// Where a graph input's tensor comes from at call time: a module slot or a flattened input
// leaf, then (for an inner tensor of a subclass) the attribute path into it.
struct InputSource {
  Tensor* slot = nullptr;          // a module slot, or nullptr for an input leaf
  size_t leaf = 0;                 // the flattened input leaf (when slot is null)
  std::vector<std::string> inner;  // attribute path into a subclass tensor; empty: the tensor itself

  // The tensor this source names for a call whose flattened input leaves are `leaves`.
  Tensor resolve(const std::vector<const Tree*>& leaves) const;
};

// How one output leaf is rebuilt after a run.
struct OutputLeaf {
  enum class Kind : uint8_t { GraphOutput, PassThrough, Constant, Subclass };
  Kind kind = Kind::Constant;
  size_t index = 0;  // GraphOutput: graph output index; PassThrough: flattened input leaf index
  Tree constant;     // Constant: the value
  // Subclass: an instance to unflatten from (the traced one), the outer meta, the metadata
  // decided at capture, and per attribute its graph output index or -1 when absent.
  std::shared_ptr<TensorSubclass> prototype;
  TensorMeta meta;
  Tree metadata;
  std::vector<std::pair<std::string, int64_t>> inner_outputs;
};

// A change that subclass dispatch code made to a subclass input during capture; the
// program's epilogue applies it to the caller's object after every run.
struct AttrMutation {
  enum class Kind : uint8_t {
    SetComputed,  // the attribute gets a tensor computed in the graph (an extra graph output)
    SetAlias,     // the attribute gets an existing input tensor (another input's inner tensor, a parameter)
    SetConstant,  // the attribute gets a tensor from outside the trace
    Clear,        // the attribute becomes absent
    SetMetadata,  // the metadata changes
  };
  Kind kind = Kind::SetComputed;
  InputSource target;  // the caller's subclass tensor
  std::string attribute;
  size_t graph_output = 0;  // SetComputed
  InputSource alias;        // SetAlias
  Tensor constant;          // SetConstant
  Tree metadata;            // SetMetadata

  std::string str() const;  // `set mask = graph output 1`, `clear mask`, `metadata = {...}`
};

// One traced specialization: a graph plus everything needed to call it.
struct CapturedGraph {
  ir::Graph graph;
  TreeSpec in_spec;
  TreeSpec out_spec;
  Guards guards;
  std::vector<InputDescriptor> inputs;    // one per graph input
  std::vector<OutputDescriptor> outputs;  // one per graph output: user outputs, then attribute mutations
  std::vector<OutputLeaf> output_leaves;  // one per flattened output leaf
  std::vector<InputSource> sources;       // one per graph input
  std::vector<AttrMutation> mutations;    // in the order the epilogue applies them
  size_t num_params = 0;                  // graph inputs that are parameters (or their inner tensors)
  size_t num_buffers = 0;                 // graph inputs that are buffers (or their inner tensors)
  std::vector<std::string> input_names;

  // Non-tensor input leaves baked into the graph, and constant output leaves.
  std::vector<std::pair<KeyPath, Tree>> baked_inputs() const;
  std::vector<std::pair<KeyPath, Tree>> constant_outputs() const;
  // The graph's inputs for a call with `inputs` (the module's current slots and the input tensors).
  std::vector<Tensor> graph_inputs(const Tree& inputs) const;
  // The outputs in forward's structure, from one tensor per graph output and the call's flattened
  // input leaves (for pass-through outputs).
  Tree output_tree(const std::vector<const Tree*>& leaves, const std::vector<Tensor>& outputs) const;
};

// The traced function: takes the inputs as a Tree (a tuple of forward's arguments) and returns a Tree.
using TreeFunction = std::function<Tree(const Tree& inputs)>;

class CapturedProgram {
 public:
  CapturedProgram(TreeFunction fn, nn::Module* module, CaptureOptions options);

  // Runs the program: checks the guards (recompiling or raising on a failure), runs the
  // graph on the module's current parameters and the input tensors, rebuilds the outputs.
  Tree run(const Tree& inputs);
  template <class... Args>
  Tree operator()(const Args&... args) {
    return run(pack(args...));
  }
  // Same, converting the result to R (from_tree).
  template <class R, class... Args>
  R call(const Args&... args) {
    return from_tree<R>(run(pack(args...)));
  }

  // The first captured specialization (ValueError after reset() until the next call).
  const CapturedGraph& primary() const;
  const ir::Graph& graph() const { return primary().graph; }
  const TreeSpec& in_spec() const { return primary().in_spec; }
  const TreeSpec& out_spec() const { return primary().out_spec; }
  const Guards& guards() const { return primary().guards; }
  const std::vector<InputDescriptor>& input_descriptors() const { return primary().inputs; }
  const std::vector<OutputDescriptor>& output_descriptors() const { return primary().outputs; }
  // Every cached specialization, oldest first.
  const std::vector<std::shared_ptr<const CapturedGraph>>& cache() const { return cache_; }
  const CaptureOptions& options() const { return options_; }
  nn::Module* module() const { return module_; }

  // Traces `inputs` into a new specialization and caches it (what run() does on a miss).
  const CapturedGraph& capture_for(const Tree& inputs);
  // Forgets every cached specialization; the next call captures again.
  void reset() { cache_.clear(); }

 private:
  template <class... Args>
  static Tree pack(const Args&... args) {
    return Tree::tuple({to_tree(args)...});
  }
  Tree execute(const CapturedGraph& entry, const std::vector<const Tree*>& leaves) const;
  // The epilogue: applies entry.mutations to the caller's subclass inputs.
  static void replay(const CapturedGraph& entry, const std::vector<const Tree*>& leaves,
                     const std::vector<Tensor>& outputs);

  TreeFunction fn_;
  nn::Module* module_;
  CaptureOptions options_;
  std::vector<std::shared_ptr<const CapturedGraph>> cache_;
};

// Traces `fn` on `example_inputs` with the parameters and buffers of `module` (nullable) as graph inputs.
CapturedProgram capture(TreeFunction fn, nn::Module* module, const Tree& example_inputs, CaptureOptions options = {});

namespace detail {
template <class... Args, class Callable>
TreeFunction tree_function(Callable callable) {
  return [callable = std::move(callable)](const Tree& inputs) mutable {
    auto args = from_tree<std::tuple<std::remove_cvref_t<Args>...>>(inputs);
    return std::apply(
        [&](auto&... values) {
          using Result = std::remove_cvref_t<decltype(callable(values...))>;
          return to_tree<Result>(callable(values...));
        },
        args);
  };
}
}  // namespace detail

// A module (called through its operator(), so nodes record their module paths; held by
// reference) or any callable (copied), with example arguments as a tuple. Arguments and
// results convert to Tree (convert.h).
template <class F, class... Args>
CapturedProgram capture(F&& module_or_callable, const std::tuple<Args...>& example_inputs,
                        CaptureOptions options = {}) {
  using Fn = std::decay_t<F>;  // a plain function decays to a function pointer
  if constexpr (std::is_base_of_v<nn::Module, Fn>) {
    static_assert(std::is_lvalue_reference_v<F>, "capture a module by reference: the program reads its slots");
    Fn* module = &module_or_callable;
    auto forward = [module](auto&... values) -> decltype(auto) { return (*module)(values...); };
    return capture(detail::tree_function<Args...>(forward), module, to_tree(example_inputs), std::move(options));
  } else {
    return capture(detail::tree_function<Args...>(Fn(std::forward<F>(module_or_callable))), nullptr,
                   to_tree(example_inputs), std::move(options));
  }
}

}  // namespace px

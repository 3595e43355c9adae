#include "dtensor/dtensor_checks.h"

#include <random>
#include <set>
#include <sstream>
#include <string_view>

#include "parallax/core/error.h"
#include "parallax/dist/sharding.h"
#include "parallax/dtensor/dtensor.h"
#include "parallax/ops/dispatch.h"
#include "parallax/ops/registry.h"
#include "support/test_util.h"

namespace px::testing {

namespace {

// Per input, one placement per mesh dim.
using Combo = std::vector<std::vector<Placement>>;

// FNV-1a: the same on every rank and every process of the job (std::hash need not be).
uint64_t mix(uint64_t seed, std::string_view text) {
  uint64_t hash = 1469598103934665603ull ^ seed;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return {1e-12, 1e-12};
    case DType::Float32:
      return {1e-5, 1e-5};
    case DType::BFloat16:
      return {1e-2, 1e-2};  // one bfloat16 ulp is 2^-8 relative: sums in another order may differ by it
    default:
      return {0, 0};
  }
}

// "" when `actual` matches `expected` in dtype, shape and values (within the dtype's tolerance).
std::string mismatch(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return "dtype " + std::string(dtype_name(actual.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  }
  Tolerance tol = tolerance_for(expected.dtype());
  ::testing::AssertionResult close = all_close(actual, expected, tol.rtol, tol.atol);
  return close ? std::string() : std::string(close.message());
}

// The global value of a DTensor without touching it: full_tensor() of a copy, so that a
// MaskPartial's mask stays with the original (a later VJP may still consume it). A plain tensor
// counts as replicated.
Tensor global_value(const Tensor& tensor) {
  if (!is_dtensor(tensor)) return tensor;
  const DTensor& dt = dtensor_of(tensor);
  return full_tensor(make_dtensor(dt.groups(), dt.spec(), dt.local(), dt.mask()));
}

std::string combo_str(const Combo& combo) {
  std::string text;
  for (size_t i = 0; i < combo.size(); ++i) text += (i ? ", " : "") + placements_str(combo[i]);
  return text;
}

// Every combination (mesh dim by mesh dim of each input, in order) when there are at most
// `max`; else the all-Replicate one and random others, distinct, from `seed`.
std::vector<Combo> placement_combos(const std::vector<std::vector<Placement>>& choices, int64_t mesh_ndim, size_t max,
                                    uint64_t seed) {
  std::vector<size_t> radix;
  for (const auto& list : choices) {
    for (int64_t d = 0; d < mesh_ndim; ++d) radix.push_back(list.size());
  }
  auto decode = [&](const std::vector<size_t>& digits) {
    Combo combo(choices.size());
    size_t slot = 0;
    for (size_t i = 0; i < choices.size(); ++i) {
      for (int64_t d = 0; d < mesh_ndim; ++d) combo[i].push_back(choices[i][digits[slot++]]);
    }
    return combo;
  };
  double total = 1;
  for (size_t r : radix) total *= static_cast<double>(r);
  std::vector<Combo> out;
  std::vector<size_t> digits(radix.size(), 0);
  if (total <= static_cast<double>(max)) {
    while (true) {
      out.push_back(decode(digits));
      size_t s = radix.size();
      while (s > 0) {
        --s;
        if (++digits[s] < radix[s]) break;
        digits[s] = 0;
        if (s == 0) return out;
      }
      if (radix.empty()) return out;
    }
  }
  std::set<std::vector<size_t>> seen{digits};
  out.push_back(decode(digits));
  std::mt19937_64 engine(seed);
  for (size_t attempt = 0; out.size() < max && attempt < 100 * max; ++attempt) {
    for (size_t s = 0; s < radix.size(); ++s) digits[s] = static_cast<size_t>(engine() % radix[s]);
    if (seen.insert(digits).second) out.push_back(decode(digits));
  }
  return out;
}

// The cotangent of output `o` under combination `k`: Replicate or Shard of one of its dims on
// each mesh dim, varying with k, o and the mesh dim.
std::vector<Placement> cotangent_placements(size_t k, size_t o, int64_t rank, int64_t mesh_ndim) {
  std::vector<Placement> placements;
  for (int64_t d = 0; d < mesh_ndim; ++d) {
    auto pick = static_cast<int64_t>((k + 3 * o + 5 * static_cast<size_t>(d)) % static_cast<size_t>(rank + 1));
    if (pick == 0) {
      placements.push_back(Replicate{});
    } else {
      placements.push_back(Shard{pick - 1});
    }
  }
  return placements;
}

std::vector<Tensor> distribute_all(const std::vector<Tensor>& inputs, const Combo& combo,
                                   const std::shared_ptr<dist::MeshGroups>& groups) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) out.push_back(distribute_tensor(inputs[i], groups, combo[i]));
  return out;
}

// An op without a rule must refuse DTensors with UnsupportedOp naming it. All-Replicate inputs
// need no communication, and the refusal comes before any, so no rank is left waiting.
void check_refused(const OpDef& op, const OpSample& sample, const std::shared_ptr<dist::MeshGroups>& groups,
                   const std::string& what, std::vector<std::string>& failures) {
  Combo replicated(sample.inputs.size(), std::vector<Placement>(groups->mesh().ndim(), Replicate{}));
  try {
    call(op, distribute_all(sample.inputs, replicated, groups), sample.attrs);
    failures.push_back(what + ": the op has no sharding rule, yet its call on DTensors did not raise UnsupportedOp");
  } catch (const CommError&) {
    throw;
  } catch (const UnsupportedOp& error) {
    if (std::string(error.what()).find(op.name) == std::string::npos) {
      failures.push_back(what + ": UnsupportedOp without the op's name: " + error.what());
    }
  } catch (const std::exception& error) {
    failures.push_back(what +
                       ": the op has no sharding rule and raised something else than UnsupportedOp: " + error.what());
  }
}

}  // namespace

std::string sample_str(const OpSample& sample) {
  std::ostringstream out;
  PrintTo(sample, &out);
  return out.str();
}

std::vector<Placement> input_placement_choices(const TensorMeta& meta) {
  std::vector<Placement> choices{Replicate{}};
  for (int64_t d = 0; d < static_cast<int64_t>(meta.shape.size()); ++d) choices.push_back(Shard{d});
  if (is_floating(meta.dtype)) choices.push_back(Partial{ReduceOp::Sum});
  return choices;
}

std::vector<std::string> check_op_sample(const OpSample& sample, const std::shared_ptr<dist::MeshGroups>& groups,
                                         const OpCheckOptions& options, OpCheckStats* stats) {
  std::vector<std::string> failures;
  OpCheckStats own;
  OpCheckStats& st = stats != nullptr ? *stats : own;
  st = OpCheckStats{};
  const std::string what = sample_str(sample) + " on " + groups->mesh().str();
  const OpDef* found = builtin_registry().find(sample.op);
  if (found == nullptr) return {what + ": no such op"};
  const OpDef& op = *found;
  if (sample.inputs.empty()) {
    st.no_inputs = true;
    return failures;
  }
  if (!op.sharding) {
    st.no_rule = true;
    check_refused(op, sample, groups, what, failures);
    return failures;
  }

  // The single-device reference, forward and VJP. The same on every rank, so returning early
  // keeps the ranks in step.
  std::vector<Tensor> expected;
  Attrs filled;
  try {
    expected = call(op, sample.inputs, sample.attrs);
    filled = check_call(op, sample.inputs, sample.attrs);
  } catch (const std::exception& error) {
    return {what + ": the single-device call fails: " + error.what()};
  }
  const uint64_t seed = mix(options.seed, sample.op + "|" + sample.note);
  bool check_vjp = options.check_vjp && sample.check_vjp && static_cast<bool>(op.vjp);
  std::vector<Tensor> cotangents;
  std::vector<Tensor> expected_grads;
  if (check_vjp) {
    bool any = false;
    for (size_t o = 0; o < expected.size(); ++o) {
      const Tensor& out = expected[o];
      bool floating = is_floating(out.dtype());
      any |= floating;
      cotangents.push_back(floating ? random_tensor(out.shape(), out.dtype(), seed + 1000 + o) : Tensor());
    }
    check_vjp = any;
  }
  if (check_vjp) {
    try {
      expected_grads = op.vjp(VjpContext{sample.inputs, expected, cotangents, filled});
    } catch (const std::exception& error) {
      failures.push_back(what + ": the single-device VJP fails: " + error.what());
      check_vjp = false;
    }
  }

  std::vector<std::vector<Placement>> choices;
  for (const Tensor& input : sample.inputs) choices.push_back(input_placement_choices(input.meta_info()));
  const int64_t mesh_ndim = groups->mesh().ndim();
  std::vector<Combo> combos = placement_combos(choices, mesh_ndim, options.max_combos, seed);
  for (size_t k = 0; k < combos.size(); ++k) {
    const Combo& combo = combos[k];
    const std::string where = what + ", inputs " + combo_str(combo);
    const size_t before = failures.size();
    ++st.combos;
    // One combination; `return` ends it (the failures recorded so far stay).
    auto run_combo = [&] {
      std::vector<Tensor> inputs = distribute_all(sample.inputs, combo, groups);
      std::vector<Tensor> outputs = call(op, inputs, sample.attrs);
      if (outputs.size() != expected.size()) {
        failures.push_back(where + ": " + std::to_string(outputs.size()) + " outputs, expected " +
                           std::to_string(expected.size()));
        return;
      }
      for (size_t o = 0; o < outputs.size(); ++o) {
        if (!is_dtensor(outputs[o])) {
          failures.push_back(where + ": output " + std::to_string(o) + " is not a DTensor");
          continue;
        }
        std::string bad = mismatch(global_value(outputs[o]), expected[o]);
        if (!bad.empty()) {
          failures.push_back(where + ": output " + std::to_string(o) + " placed " +
                             placements_str(dtensor_spec(outputs[o]).placements) + " differs: " + bad);
        }
      }
      if (check_vjp) {
        ++st.vjp_combos;
        std::vector<Tensor> grad_outputs;
        std::string placed;
        for (size_t o = 0; o < cotangents.size(); ++o) {
          if (!cotangents[o].defined()) {
            grad_outputs.emplace_back();
            continue;
          }
          std::vector<Placement> placements = cotangent_placements(k, o, cotangents[o].dim(), mesh_ndim);
          placed += (placed.empty() ? "" : ", ") + placements_str(placements);
          grad_outputs.push_back(distribute_tensor(cotangents[o], groups, placements));
        }
        const std::string vjp_where = where + ", VJP with cotangents " + placed;
        std::vector<Tensor> grads = op.vjp(VjpContext{inputs, outputs, grad_outputs, filled});
        if (grads.size() != expected_grads.size()) {
          failures.push_back(vjp_where + ": " + std::to_string(grads.size()) + " gradients, expected " +
                             std::to_string(expected_grads.size()));
          return;
        }
        for (size_t i = 0; i < grads.size(); ++i) {
          if (!expected_grads[i].defined()) continue;
          if (!grads[i].defined()) {
            failures.push_back(vjp_where + ": no gradient for input " + std::to_string(i));
            continue;
          }
          std::string bad = mismatch(global_value(grads[i]), expected_grads[i]);
          if (!bad.empty()) {
            std::string placement =
                is_dtensor(grads[i]) ? placements_str(dtensor_spec(grads[i]).placements) : std::string("plain");
            failures.push_back(vjp_where + ": gradient " + std::to_string(i) + " placed " + placement +
                               " differs: " + bad);
          }
        }
      }
    };
    try {
      run_combo();
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& error) {
      failures.push_back(where + ": " + error.what());
    }
    if (failures.size() > before) ++st.failed_combos;
  }
  return failures;
}

std::vector<std::string> check_redistribution_pairs(const std::shared_ptr<dist::MeshGroups>& groups, const Shape& shape,
                                                    uint64_t seed) {
  std::vector<Placement> single{Replicate{}};
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) single.push_back(Shard{d});
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) single.push_back(Partial{op});
  const dist::DeviceMesh& mesh = groups->mesh();
  std::vector<std::vector<Placement>> all{{}};
  for (int64_t d = 0; d < mesh.ndim(); ++d) {
    std::vector<std::vector<Placement>> next;
    for (const auto& prefix : all) {
      for (const Placement& choice : single) {
        next.push_back(prefix);
        next.back().push_back(choice);
      }
    }
    all = std::move(next);
  }

  const Tensor global = random_tensor(shape, DType::Float64, seed);
  const std::string on = mesh.str() + " " + shape_str(shape) + ": ";
  std::vector<std::string> failures;
  for (const auto& from : all) {
    for (const auto& to : all) {
      const std::string where = on + placements_str(from) + " -> " + placements_str(to);
      try {
        Tensor moved = redistribute(distribute_tensor(global, groups, from), to);
        if (dtensor_spec(moved).placements != to) {
          failures.push_back(where + ": placed " + placements_str(dtensor_spec(moved).placements));
          continue;
        }
        ::testing::AssertionResult full = all_close(full_tensor(moved), global);
        if (!full) failures.push_back(where + ": full_tensor differs: " + full.message());
        bool partial = false;
        for (const Placement& p : to) partial |= is_partial(p);
        if (partial) continue;
        dist::LocalShard block = dist::local_shard(shape, to, mesh, groups->coordinate());
        Tensor expected = global;
        for (size_t d = 0; d < shape.size(); ++d) {
          expected = expected.narrow(static_cast<int64_t>(d), block.offset[d], block.shape[d]);
        }
        ::testing::AssertionResult local = all_close(to_local(moved), expected);
        if (!local) failures.push_back(where + ": the local shard differs: " + local.message());
      } catch (const CommError&) {
        throw;
      } catch (const std::exception& error) {
        failures.push_back(where + ": " + error.what());
      }
    }
  }
  return failures;
}

}  // namespace px::testing

#pragma once
// DTensor checks that run INSIDE one rank of a job (threads backend or mpirun), so that the
// threads tests and the mpi tests share them. Each returns the failures it found, as text,
// and never stops at the first one.
//
// SPMD discipline: every rank runs exactly the same sequence of collectives, so every rank
// must run every case, with the same seeds, and a case that throws is recorded and the next
// one started (it throws on every rank alike when the failure is deterministic). A CommError
// means the job is broken (a rank failed or left): it is not caught here but propagates, so
// that the caller stops.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parallax/core/placement.h"
#include "parallax/core/shape.h"
#include "parallax/dist/device_mesh.h"
#include "support/op_samples.h"

namespace px::testing {

struct OpCheckOptions {
  // Seeds the sampling of placement combinations and the VJP cotangents: must be the same on
  // every rank (mixed with the sample's name and note, so samples differ from each other).
  uint64_t seed = 1;
  // Every combination when there are at most this many; otherwise a seeded random sample of
  // this many, the all-Replicate one first.
  size_t max_combos = 64;
  bool check_vjp = true;
};

struct OpCheckStats {
  bool no_rule = false;    // the op has no sharding rule: only its UnsupportedOp was checked
  bool no_inputs = false;  // nothing to distribute (a factory): nothing checked
  size_t combos = 0;       // placement combinations run
  size_t failed_combos = 0;
  size_t vjp_combos = 0;  // of them, with the VJP through DTensor checked too
};

// "add(f64[3,4], f64[4]) [broadcast trailing]"
std::string sample_str(const OpSample& sample);

// The placements one mesh dim may give an input: Replicate, Shard(d) for every dim of it, and
// Partial(sum) when it is floating.
std::vector<Placement> input_placement_choices(const TensorMeta& meta);

// For the sample's op on this job's mesh: for every combination of input placements (see
// OpCheckOptions), the inputs are distributed (distribute_tensor of the same global tensor on
// every rank), the op is called through px::call, and every output's full_tensor() must equal
// the single-device result (float64: rtol = atol = 1e-12; float32: 1e-5; bfloat16: 1e-2; other
// dtypes exactly). For differentiable samples (check_vjp, an op with a VJP, a floating output)
// the op's VJP is also called with DTensor inputs, outputs and cotangents (a seeded cotangent
// placed Replicate or Shard, chosen per combination) and every gradient's full_tensor() must
// equal the single-device VJP's. An op without a sharding rule must raise UnsupportedOp naming
// it on DTensor inputs; nothing else is checked for it (stats->no_rule).
std::vector<std::string> check_op_sample(const OpSample& sample, const std::shared_ptr<dist::MeshGroups>& groups,
                                         const OpCheckOptions& options = {}, OpCheckStats* stats = nullptr);

// Every ordered pair of placements (per mesh dim: Replicate, Shard(d) for each dim of `shape`,
// Partial of each reduction): distribute -> redistribute -> full_tensor gives back the global
// tensor, the placements are as asked, and a non-partial result's local shard is the expected
// block of the global tensor.
std::vector<std::string> check_redistribution_pairs(const std::shared_ptr<dist::MeshGroups>& groups, const Shape& shape,
                                                    uint64_t seed = 7);

}  // namespace px::testing

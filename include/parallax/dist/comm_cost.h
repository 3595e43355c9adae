#pragma once
// The alpha-beta communication model: a message of b bytes over a link costs
// alpha + b / beta (alpha: latency per message, seconds; beta: bandwidth per rank and
// direction, bytes per second; GB below means 1e9 bytes, as nccl-tests reports).
//
// Collectives over n ranks use ring algorithms (as NCCL does for large messages). Every
// rank sends and receives in each of the ring's steps, so a collective costs
//   steps * alpha + factor * bytes / beta
// with, for `bytes` as defined per collective:
//   all_gather      bytes = the gathered (full) size     (n-1) alpha + (n-1)/n  bytes/beta
//   reduce_scatter  bytes = the full (unscattered) size  (n-1) alpha + (n-1)/n  bytes/beta
//   all_reduce      bytes = the tensor's size           2(n-1) alpha + 2(n-1)/n bytes/beta
//                   (a reduce_scatter followed by an all_gather)
//   all_to_all      bytes = one rank's whole buffer      (n-1) alpha + (n-1)/n  bytes/beta
//                   (a rank keeps 1/n and sends the rest, one chunk per peer)
//   broadcast       bytes = the tensor's size            (n-1) alpha +          bytes/beta
//                   (pipelined ring: the tensor streams around the ring in small chunks)
//   send_recv       bytes = the message's size                 alpha +          bytes/beta
// and nothing for n = 1. The factors are nccl-tests' "bus bandwidth" factors, so a beta read
// off an nccl-tests busbw column plugs in directly.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "parallax/dist/device_mesh.h"

namespace px::dist {

struct LinkProfile {
  std::string name;
  double alpha_s = 0;           // latency per message (per ring step), seconds
  double beta_bytes_per_s = 0;  // bus bandwidth per rank and direction, bytes per second
  friend bool operator==(const LinkProfile&, const LinkProfile&) = default;
};

// Named profiles for common GPU clusters. The bandwidths are the bus bandwidth NCCL's ring
// reaches, which sits a little below the link's line rate; the latencies are NCCL's per-step
// order of magnitude. They rank plans; they do not predict wall time to better than ~20%.
LinkProfile nvlink4_h100();       // intra-node H100 SXM, NVLink4 through NVSwitch
LinkProfile nvlink4_h200();       // intra-node H200 SXM: the same NVLink4 fabric as H100
LinkProfile nvlink3_a100();       // intra-node A100 SXM, NVLink3 through NVSwitch
LinkProfile infiniband_ndr400();  // inter-node, one 400 Gb/s NDR port per GPU
LinkProfile infiniband_hdr200();  // inter-node, one 200 Gb/s HDR port per GPU

enum class Collective : uint8_t { AllGather, ReduceScatter, AllReduce, AllToAll, Broadcast, SendRecv };
// "all_gather", "reduce_scatter", ...
std::string collective_name(Collective collective);

// cost = latency_steps * alpha + bandwidth_factor * bytes / beta.
struct CostCoefficients {
  double latency_steps = 0;
  double bandwidth_factor = 0;
  friend bool operator==(const CostCoefficients&, const CostCoefficients&) = default;
};
// The coefficients of the table above; all zero for n = 1 (send_recv: always 1 and 1).
// ValueError for n < 1.
CostCoefficients collective_coefficients(Collective collective, int64_t n);

// Seconds for one collective over n ranks moving `bytes` (as defined in the table above).
// ValueError for n < 1, negative bytes, or a profile whose alpha is negative or beta not positive.
double collective_cost(Collective collective, int64_t n, double bytes, const LinkProfile& link);
double all_gather_cost(int64_t n, double bytes, const LinkProfile& link);
double reduce_scatter_cost(int64_t n, double bytes, const LinkProfile& link);
double all_reduce_cost(int64_t n, double bytes, const LinkProfile& link);
double all_to_all_cost(int64_t n, double bytes, const LinkProfile& link);
double broadcast_cost(int64_t n, double bytes, const LinkProfile& link);
double send_recv_cost(double bytes, const LinkProfile& link);

// One measured collective: `bytes` as defined in the table above, and its wall time.
struct CommSample {
  double bytes = 0;
  double seconds = 0;
};

// The profile whose model best fits measured times of `collective` over n ranks (send_recv
// ignores n). Least squares on relative error: samples span many orders of magnitude (8 B to
// 256 MiB), and on absolute error the largest messages would decide alpha alone. A negative
// fitted latency (noise on a link whose latency is tiny) is clamped to 0 and the bandwidth
// refitted. ValueError for fewer than two distinct sizes, a non-positive time, a negative size,
// n < 2 for a collective, or times that do not grow with size.
LinkProfile fit_link_profile(std::string name, std::span<const CommSample> samples,
                             Collective collective = Collective::SendRecv, int64_t n = 2);

// One link profile per mesh dimension.
struct MeshTopology {
  std::vector<LinkProfile> links;

  // ValueError when dim is out of range.
  const LinkProfile& link(int64_t dim) const;
  static MeshTopology uniform(int64_t ndim, const LinkProfile& link);
  // A cluster whose nodes hold `ranks_per_node` consecutive ranks (node = rank / ranks_per_node):
  // a mesh dim whose every sub-group lies inside one node gets `intra`, any other `inter` (a ring
  // that leaves a node once runs at the inter-node speed). For an 8x8 mesh with 8 ranks per
  // node: dim 0 inter, dim 1 intra.
  static MeshTopology cluster(const DeviceMesh& mesh, int64_t ranks_per_node, const LinkProfile& intra,
                              const LinkProfile& inter);
};

// The cost of a collective over the sub-groups of mesh dimension `dim` (all of them run at
// once, each on its own links). ValueError when the topology's dim count differs from the mesh's.
double mesh_collective_cost(Collective collective, const DeviceMesh& mesh, const MeshTopology& topology, int64_t dim,
                            double bytes);

}  // namespace px::dist

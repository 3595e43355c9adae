#include "parallax/dist/comm_cost.h"

#include <cmath>
#include <set>

#include "parallax/core/error.h"

namespace px::dist {

// Sources for the named profiles:
// - NVLink4 (H100/H200 SXM): 18 links, 900 GB/s per GPU in both directions together, i.e.
//   450 GB/s per direction (NVIDIA H100 and H200 Tensor Core GPU datasheets; DGX H100 user
//   guide). nccl-tests all_reduce on 8 GPUs of an HGX H100 reports bus bandwidths in the
//   ~370-480 GB/s range depending on NCCL version and NVLS (nccl-tests doc/PERFORMANCE.md
//   defines bus bandwidth); 450 GB/s is the figure we plan with.
// - NVLink3 (A100 SXM): 12 links, 600 GB/s per GPU in both directions, 300 per direction (A100
//   datasheet); nccl-tests all_reduce busbw on a DGX A100 is ~230-240 GB/s.
// - InfiniBand NDR: 400 Gb/s = 50 GB/s line rate per port, one ConnectX-7 per GPU in DGX H100;
//   multi-node nccl-tests busbw reaches ~45-48 GB/s per GPU. HDR: 200 Gb/s = 25 GB/s line
//   rate (ConnectX-6, DGX A100), ~23 GB/s in nccl-tests.
// - Latencies: NCCL's per-step latency is ~1-3 us over NVLink (LL protocol) and ~5-10 us over
//   InfiniBand (network plus proxy thread), from small-message nccl-tests times divided by the
//   ring's step count.
LinkProfile nvlink4_h100() { return {"nvlink4-h100", 2e-6, 450e9}; }
LinkProfile nvlink4_h200() { return {"nvlink4-h200", 2e-6, 450e9}; }
LinkProfile nvlink3_a100() { return {"nvlink3-a100", 3e-6, 240e9}; }
LinkProfile infiniband_ndr400() { return {"ib-ndr400", 6e-6, 46e9}; }
LinkProfile infiniband_hdr200() { return {"ib-hdr200", 8e-6, 23e9}; }

std::string collective_name(Collective collective) {
  switch (collective) {
    case Collective::AllGather:
      return "all_gather";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::AllReduce:
      return "all_reduce";
    case Collective::AllToAll:
      return "all_to_all";
    case Collective::Broadcast:
      return "broadcast";
    case Collective::SendRecv:
      return "send_recv";
  }
  return "?";
}

CostCoefficients collective_coefficients(Collective collective, int64_t n) {
  if (n < 1) throw ValueError(collective_name(collective) + " cost: " + std::to_string(n) + " ranks; at least 1");
  if (collective == Collective::SendRecv) return {1, 1};
  if (n == 1) return {0, 0};
  const double steps = static_cast<double>(n - 1);
  const double ring = steps / static_cast<double>(n);
  switch (collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
      return {steps, ring};
    case Collective::AllReduce:
      return {2 * steps, 2 * ring};
    case Collective::Broadcast:
      return {steps, 1};
    case Collective::SendRecv:
      break;
  }
  return {1, 1};
}

namespace {

void check_link(const std::string& what, const LinkProfile& link) {
  if (!(link.alpha_s >= 0) || !std::isfinite(link.alpha_s) || !(link.beta_bytes_per_s > 0)) {
    throw ValueError(what + ": link profile '" + link.name + "' has alpha " + std::to_string(link.alpha_s) +
                     " s and beta " + std::to_string(link.beta_bytes_per_s) + " B/s; alpha must be >= 0 and beta > 0");
  }
}

}  // namespace

double collective_cost(Collective collective, int64_t n, double bytes, const LinkProfile& link) {
  const std::string what = collective_name(collective) + " cost";
  if (!(bytes >= 0)) throw ValueError(what + ": " + std::to_string(bytes) + " bytes; must be >= 0");
  check_link(what, link);
  CostCoefficients c = collective_coefficients(collective, n);
  return c.latency_steps * link.alpha_s + c.bandwidth_factor * bytes / link.beta_bytes_per_s;
}

double all_gather_cost(int64_t n, double bytes, const LinkProfile& link) {
  return collective_cost(Collective::AllGather, n, bytes, link);
}
double reduce_scatter_cost(int64_t n, double bytes, const LinkProfile& link) {
  return collective_cost(Collective::ReduceScatter, n, bytes, link);
}
double all_reduce_cost(int64_t n, double bytes, const LinkProfile& link) {
  return collective_cost(Collective::AllReduce, n, bytes, link);
}
double all_to_all_cost(int64_t n, double bytes, const LinkProfile& link) {
  return collective_cost(Collective::AllToAll, n, bytes, link);
}
double broadcast_cost(int64_t n, double bytes, const LinkProfile& link) {
  return collective_cost(Collective::Broadcast, n, bytes, link);
}
double send_recv_cost(double bytes, const LinkProfile& link) {
  return collective_cost(Collective::SendRecv, 2, bytes, link);
}

LinkProfile fit_link_profile(std::string name, std::span<const CommSample> samples, Collective collective, int64_t n) {
  const std::string what = "fit_link_profile(" + collective_name(collective) + ")";
  if (collective != Collective::SendRecv && n < 2) {
    throw ValueError(what + ": " + std::to_string(n) + " ranks; a collective needs at least 2 to measure a link");
  }
  std::set<double> sizes;
  for (const CommSample& sample : samples) {
    if (!(sample.bytes >= 0) || !std::isfinite(sample.bytes) || !(sample.seconds > 0) ||
        !std::isfinite(sample.seconds)) {
      throw ValueError(what + ": sample (" + std::to_string(sample.bytes) + " bytes, " +
                       std::to_string(sample.seconds) + " s) needs bytes >= 0 and a positive time");
    }
    sizes.insert(sample.bytes);
  }
  if (sizes.size() < 2) {
    throw ValueError(what + ": " + std::to_string(sizes.size()) +
                     " distinct message sizes; fitting latency and bandwidth needs at least 2");
  }
  // Weighted least squares for t = a + b * bytes with weights 1/t^2 (relative error), in
  // centered form to avoid cancellation between large sums.
  double sw = 0, swx = 0, swy = 0;
  for (const CommSample& s : samples) {
    double w = 1 / (s.seconds * s.seconds);
    sw += w;
    swx += w * s.bytes;
    swy += w * s.seconds;
  }
  const double mean_x = swx / sw, mean_y = swy / sw;
  double sxx = 0, sxy = 0, sw_xx = 0, sw_xy = 0;
  for (const CommSample& s : samples) {
    double w = 1 / (s.seconds * s.seconds);
    sxx += w * (s.bytes - mean_x) * (s.bytes - mean_x);
    sxy += w * (s.bytes - mean_x) * (s.seconds - mean_y);
    sw_xx += w * s.bytes * s.bytes;
    sw_xy += w * s.bytes * s.seconds;
  }
  double slope = sxy / sxx;
  double intercept = mean_y - slope * mean_x;
  if (intercept < 0) {
    intercept = 0;
    slope = sw_xy / sw_xx;
  }
  if (!(slope > 0)) {
    throw ValueError(what + ": the measured times do not grow with the message size; no bandwidth fits");
  }
  CostCoefficients c = collective_coefficients(collective, n);
  return LinkProfile{std::move(name), intercept / c.latency_steps, c.bandwidth_factor / slope};
}

const LinkProfile& MeshTopology::link(int64_t dim) const {
  const auto ndim = static_cast<int64_t>(links.size());
  if (dim < 0 || dim >= ndim) {
    throw ValueError("MeshTopology: dim " + std::to_string(dim) + " is out of range for a topology of " +
                     std::to_string(ndim) + " dimensions");
  }
  return links[static_cast<size_t>(dim)];
}

MeshTopology MeshTopology::uniform(int64_t ndim, const LinkProfile& link) {
  if (ndim < 1) throw ValueError("MeshTopology::uniform: " + std::to_string(ndim) + " dimensions; at least 1");
  return MeshTopology{std::vector<LinkProfile>(static_cast<size_t>(ndim), link)};
}

MeshTopology MeshTopology::cluster(const DeviceMesh& mesh, int64_t ranks_per_node, const LinkProfile& intra,
                                   const LinkProfile& inter) {
  if (ranks_per_node < 1) {
    throw ValueError("MeshTopology::cluster: " + std::to_string(ranks_per_node) + " ranks per node; at least 1");
  }
  MeshTopology topology;
  for (int64_t dim = 0; dim < mesh.ndim(); ++dim) {
    bool inside_nodes = true;
    for (const std::vector<int>& group : mesh.groups(dim)) {
      for (int rank : group) inside_nodes = inside_nodes && rank / ranks_per_node == group.front() / ranks_per_node;
    }
    topology.links.push_back(inside_nodes ? intra : inter);
  }
  return topology;
}

double mesh_collective_cost(Collective collective, const DeviceMesh& mesh, const MeshTopology& topology, int64_t dim,
                            double bytes) {
  if (static_cast<int64_t>(topology.links.size()) != mesh.ndim()) {
    throw ValueError("mesh_collective_cost: the topology has " + std::to_string(topology.links.size()) +
                     " link profiles for " + mesh.str() + ", which has " + std::to_string(mesh.ndim()) + " dimensions");
  }
  dim = mesh.normalize_dim(dim);
  return collective_cost(collective, mesh.size(dim), bytes, topology.link(dim));
}

}  // namespace px::dist

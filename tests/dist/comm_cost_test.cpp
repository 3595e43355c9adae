#include "parallax/dist/comm_cost.h"

#include <gtest/gtest.h>

#include <cmath>

#include "parallax/core/error.h"
#include "support/test_util.h"

namespace px::dist {
namespace {

using px::testing::expect_value_error;

const LinkProfile kLink{"test", 1e-5, 1e9};  // 10 us, 1 GB/s: easy figures by hand

TEST(CommCost, RingFormulasByHand) {
  // n = 4, 1 MB: (n-1)/n = 0.75 -> 0.75 ms of bandwidth; 3 steps of latency = 30 us.
  EXPECT_DOUBLE_EQ(all_gather_cost(4, 1e6, kLink), 3e-5 + 7.5e-4);
  EXPECT_DOUBLE_EQ(reduce_scatter_cost(4, 1e6, kLink), 3e-5 + 7.5e-4);
  EXPECT_DOUBLE_EQ(all_to_all_cost(4, 1e6, kLink), 3e-5 + 7.5e-4);
  EXPECT_DOUBLE_EQ(all_reduce_cost(4, 1e6, kLink), 6e-5 + 1.5e-3);
  EXPECT_DOUBLE_EQ(broadcast_cost(4, 1e6, kLink), 3e-5 + 1e-3);
  EXPECT_DOUBLE_EQ(send_recv_cost(1e6, kLink), 1e-5 + 1e-3);
  // n = 8, 64 MiB over NVLink4 H100: 7/8 * 2^26 / 450e9 + 7 * 2 us.
  const double bytes = 64.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(all_gather_cost(8, bytes, nvlink4_h100()), 7 * 2e-6 + 7.0 / 8 * bytes / 450e9);
  EXPECT_DOUBLE_EQ(all_reduce_cost(8, bytes, nvlink4_h100()), 14 * 2e-6 + 14.0 / 8 * bytes / 450e9);
  // The all-reduce is exactly a reduce_scatter then an all_gather.
  EXPECT_DOUBLE_EQ(all_reduce_cost(8, bytes, kLink),
                   reduce_scatter_cost(8, bytes, kLink) + all_gather_cost(8, bytes, kLink));
  EXPECT_DOUBLE_EQ(collective_cost(Collective::AllReduce, 2, 100, kLink), 2e-5 + 100 / 1e9);
}

TEST(CommCost, OneRankCostsNothing) {
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce, Collective::AllToAll,
                       Collective::Broadcast}) {
    EXPECT_EQ(collective_cost(c, 1, 1e9, kLink), 0.0) << collective_name(c);
    EXPECT_EQ(collective_coefficients(c, 1), (CostCoefficients{0, 0}));
  }
  EXPECT_DOUBLE_EQ(collective_cost(Collective::AllReduce, 4, 0, kLink), 6e-5) << "zero bytes still pays the latency";
}

TEST(CommCost, Coefficients) {
  EXPECT_EQ(collective_coefficients(Collective::AllGather, 4), (CostCoefficients{3, 0.75}));
  EXPECT_EQ(collective_coefficients(Collective::ReduceScatter, 2), (CostCoefficients{1, 0.5}));
  EXPECT_EQ(collective_coefficients(Collective::AllReduce, 4), (CostCoefficients{6, 1.5}));
  EXPECT_EQ(collective_coefficients(Collective::AllToAll, 8), (CostCoefficients{7, 0.875}));
  EXPECT_EQ(collective_coefficients(Collective::Broadcast, 8), (CostCoefficients{7, 1}));
  EXPECT_EQ(collective_coefficients(Collective::SendRecv, 8), (CostCoefficients{1, 1}));
  EXPECT_EQ(collective_name(Collective::ReduceScatter), "reduce_scatter");
}

TEST(CommCost, NamedProfiles) {
  EXPECT_EQ(nvlink4_h100().beta_bytes_per_s, 450e9);
  EXPECT_EQ(nvlink4_h200().beta_bytes_per_s, nvlink4_h100().beta_bytes_per_s);
  EXPECT_EQ(nvlink3_a100().beta_bytes_per_s, 240e9);
  EXPECT_GE(infiniband_ndr400().beta_bytes_per_s, 45e9);
  EXPECT_LE(infiniband_ndr400().beta_bytes_per_s, 50e9);
  EXPECT_LT(infiniband_hdr200().beta_bytes_per_s, 25e9);
  for (const LinkProfile& link :
       {nvlink4_h100(), nvlink4_h200(), nvlink3_a100(), infiniband_ndr400(), infiniband_hdr200()}) {
    EXPECT_FALSE(link.name.empty());
    EXPECT_GT(link.alpha_s, 0);
    EXPECT_LT(link.alpha_s, 20e-6) << link.name;
  }
  EXPECT_LT(nvlink4_h100().alpha_s, infiniband_ndr400().alpha_s);
}

TEST(CommCost, Errors) {
  expect_value_error([] { all_gather_cost(0, 8, kLink); }, "all_gather cost: 0 ranks; at least 1");
  expect_value_error([] { all_reduce_cost(2, -1, kLink); }, "all_reduce cost: -1.000000 bytes; must be >= 0");
  expect_value_error(
      [] {
        broadcast_cost(2, 8, LinkProfile{"bad", 1e-6, 0});
      },
      "broadcast cost: link profile 'bad' has alpha 0.000001 s and beta 0.000000 B/s; alpha must be "
      ">= 0 and beta > 0");
  EXPECT_THROW(broadcast_cost(2, 8, (LinkProfile{"bad", -1, 1e9})), ValueError);
  EXPECT_THROW(broadcast_cost(2, 8, (LinkProfile{"bad", NAN, 1e9})), ValueError);
}

std::vector<CommSample> synthetic(Collective c, int64_t n, const LinkProfile& link, double noise = 0) {
  std::vector<CommSample> samples;
  int i = 0;
  for (double bytes = 8; bytes <= 256.0 * 1024 * 1024; bytes *= 4, ++i) {
    double wobble = noise * ((i % 3) - 1.0);  // deterministic -noise, 0, +noise pattern
    samples.push_back({bytes, collective_cost(c, n, bytes, link) * (1 + wobble)});
  }
  return samples;
}

TEST(CommCost, FitRecoversKnownParameters) {
  const LinkProfile truth{"truth", 7e-6, 12e9};
  LinkProfile p2p = fit_link_profile("measured", synthetic(Collective::SendRecv, 2, truth));
  EXPECT_EQ(p2p.name, "measured");
  EXPECT_NEAR(p2p.alpha_s, truth.alpha_s, 1e-9 * truth.alpha_s);
  EXPECT_NEAR(p2p.beta_bytes_per_s, truth.beta_bytes_per_s, 1e-9 * truth.beta_bytes_per_s);
  for (Collective c : {Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce, Collective::AllToAll,
                       Collective::Broadcast}) {
    for (int64_t n : {2, 4, 8}) {
      LinkProfile fit = fit_link_profile("threads", synthetic(c, n, truth), c, n);
      EXPECT_NEAR(fit.alpha_s, truth.alpha_s, 1e-9 * truth.alpha_s) << collective_name(c) << " n=" << n;
      EXPECT_NEAR(fit.beta_bytes_per_s, truth.beta_bytes_per_s, 1e-9 * truth.beta_bytes_per_s)
          << collective_name(c) << " n=" << n;
    }
  }
  // Two exact points determine the line.
  std::vector<CommSample> two{{0, 5e-6}, {1e6, 5e-6 + 1e6 / 2e9}};
  LinkProfile line = fit_link_profile("two", two);
  EXPECT_NEAR(line.alpha_s, 5e-6, 1e-15);
  EXPECT_NEAR(line.beta_bytes_per_s, 2e9, 1e-3);
}

TEST(CommCost, FitToleratesNoiseAcrossSizes) {
  // 5% multiplicative noise: a relative-error fit keeps both parameters within ~10%, where an
  // absolute-error fit would lose the latency to the largest messages.
  const LinkProfile truth{"truth", 3e-6, 20e9};
  LinkProfile fit =
      fit_link_profile("noisy", synthetic(Collective::AllReduce, 4, truth, 0.05), Collective::AllReduce, 4);
  EXPECT_NEAR(fit.alpha_s, truth.alpha_s, 0.1 * truth.alpha_s);
  EXPECT_NEAR(fit.beta_bytes_per_s, truth.beta_bytes_per_s, 0.1 * truth.beta_bytes_per_s);
}

TEST(CommCost, FitClampsNegativeLatency) {
  // Times proportional to size minus a little: the unconstrained intercept is negative.
  std::vector<CommSample> samples{{1e3, 0.9e-6}, {1e6, 1e-3}, {1e7, 1e-2}};
  LinkProfile fit = fit_link_profile("clamped", samples);
  EXPECT_EQ(fit.alpha_s, 0.0);
  EXPECT_GT(fit.beta_bytes_per_s, 0.9e9);
  EXPECT_LT(fit.beta_bytes_per_s, 1.2e9);
}

TEST(CommCost, FitErrors) {
  expect_value_error(
      [] {
        fit_link_profile("x", std::vector<CommSample>{{8, 1e-6}, {8, 2e-6}});
      },
      "fit_link_profile(send_recv): 1 distinct message sizes; fitting latency and bandwidth needs at "
      "least 2");
  expect_value_error([] { fit_link_profile("x", std::vector<CommSample>{}); },
                     "fit_link_profile(send_recv): 0 distinct message sizes; fitting latency and bandwidth needs at "
                     "least 2");
  expect_value_error(
      [] {
        fit_link_profile("x", std::vector<CommSample>{{8, 0}, {16, 1e-6}});
      },
      "fit_link_profile(send_recv): sample (8.000000 bytes, 0.000000 s) needs bytes >= 0 and a "
      "positive time");
  expect_value_error(
      [] {
        fit_link_profile("x", std::vector<CommSample>{{8, 2e-6}, {1e6, 1e-6}});
      },
      "fit_link_profile(send_recv): the measured times do not grow with the message size; no "
      "bandwidth fits");
  expect_value_error(
      [] {
        fit_link_profile("x", std::vector<CommSample>{{8, 1e-6}, {16, 2e-6}}, Collective::AllReduce, 1);
      },
      "fit_link_profile(all_reduce): 1 ranks; a collective needs at least 2 to measure a link");
}

TEST(MeshTopology, ClusterAssignsIntraAndInterNodeLinks) {
  const LinkProfile nv = nvlink4_h100(), ib = infiniband_ndr400();
  MeshTopology t88 = MeshTopology::cluster(DeviceMesh({8, 8}), 8, nv, ib);
  EXPECT_EQ(t88.links, (std::vector<LinkProfile>{ib, nv}));
  MeshTopology t1684 = MeshTopology::cluster(DeviceMesh({16, 8, 4}), 8, nv, ib);
  EXPECT_EQ(t1684.links, (std::vector<LinkProfile>{ib, ib, nv})) << "a ring of 8 over 32-rank blocks leaves nodes";
  EXPECT_EQ(MeshTopology::cluster(DeviceMesh({2, 4}), 8, nv, ib).links, (std::vector<LinkProfile>{nv, nv}));
  EXPECT_EQ(MeshTopology::cluster(DeviceMesh({2, 4}), 2, nv, ib).links, (std::vector<LinkProfile>{ib, ib}))
      << "a 4-rank ring over 2-rank nodes crosses nodes";
  EXPECT_EQ(MeshTopology::cluster(DeviceMesh({4, 2}), 2, nv, ib).links, (std::vector<LinkProfile>{ib, nv}));
  // An explicit rank list: dim 0 pairs (0, 1) and (2, 3), each inside a 2-rank node.
  EXPECT_EQ(MeshTopology::cluster(DeviceMesh({2, 2}, {}, {0, 2, 1, 3}), 2, nv, ib).links,
            (std::vector<LinkProfile>{nv, ib}));
  EXPECT_THROW(MeshTopology::cluster(DeviceMesh({2}), 0, nv, ib), ValueError);
}

TEST(MeshTopology, PerDimensionCosts) {
  DeviceMesh mesh({8, 8}, {"node", "gpu"});
  MeshTopology topology = MeshTopology::cluster(mesh, 8, nvlink4_h100(), infiniband_ndr400());
  const double bytes = 1 << 30;
  EXPECT_DOUBLE_EQ(mesh_collective_cost(Collective::AllReduce, mesh, topology, 1, bytes),
                   all_reduce_cost(8, bytes, nvlink4_h100()));
  EXPECT_DOUBLE_EQ(mesh_collective_cost(Collective::AllReduce, mesh, topology, mesh.dim_index("node"), bytes),
                   all_reduce_cost(8, bytes, infiniband_ndr400()));
  EXPECT_GT(mesh_collective_cost(Collective::AllGather, mesh, topology, 0, bytes),
            5 * mesh_collective_cost(Collective::AllGather, mesh, topology, -1, bytes));
  EXPECT_EQ(MeshTopology::uniform(2, kLink).links, (std::vector<LinkProfile>{kLink, kLink}));
  EXPECT_EQ(MeshTopology::uniform(2, kLink).link(1), kLink);
  expect_value_error([&] { MeshTopology::uniform(2, kLink).link(2); },
                     "MeshTopology: dim 2 is out of range for a topology of 2 dimensions");
  expect_value_error(
      [&] { mesh_collective_cost(Collective::AllGather, mesh, MeshTopology::uniform(1, kLink), 0, 8); },
      "mesh_collective_cost: the topology has 1 link profiles for DeviceMesh(node=8, gpu=8), which has 2 dimensions");
  EXPECT_THROW(MeshTopology::uniform(0, kLink), ValueError);
}

}  // namespace
}  // namespace px::dist

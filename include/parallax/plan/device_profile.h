#pragma once
// DeviceProfile: what the planner's cost model knows about one device: peak compute
// rates, memory bandwidth and capacity, and the links between devices. Op times are
// rooflines: an op takes
//   max(flops / peak, (bytes read + bytes written) / memory bandwidth)
// where the peak is a matmul rate for ops whose OpTraits say `matmul_like` (matmul,
// linear, attention: what runs on tensor cores) and the vector rate for everything
// else. Rooflines rank plans; they ignore launch overheads, cache reuse and overlap, so
// they predict wall time only to a factor.
//
// A calibrated profile (plan/calibration.h) also carries measured timings for the ops it has
// seen: for those, time = per_call + flops * per_flop + bytes * per_byte, fitted to the op's
// own kernel on this device; every other op keeps the roofline plus `op_overhead_s`.
//
// GPU figures are NVIDIA's published peaks for the SXM parts (dense, no sparsity); see
// device_profile.cpp for the sources. Capacities are the datasheet figures in decimal
// bytes (80 GB = 80e9), a little below what the device reports, which leaves room for
// the runtime's own buffers.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "parallax/core/dtype.h"
#include "parallax/dist/comm_cost.h"
#include "parallax/dist/device_mesh.h"
#include "parallax/ops/op_def.h"

namespace px::plan {

// One op's measured time model on one dtype: seconds = per_call + flops * per_flop + bytes *
// per_byte (bytes read plus written), all coefficients >= 0.
struct OpTiming {
  double per_call_s = 0;
  double per_flop_s = 0;
  double per_byte_s = 0;
  int64_t samples = 0;   // the measurements it was fitted to
  double max_flops = 0;  // the largest FLOPs and bytes among them: the fit's range
  double max_bytes = 0;
  double seconds(const OpCost& cost) const {
    return per_call_s + cost.flops * per_flop_s + (cost.bytes_read + cost.bytes_written) * per_byte_s;
  }
  friend bool operator==(const OpTiming&, const OpTiming&) = default;
};

struct DeviceProfile {
  std::string name;
  // Dense matmul peak for 16-bit inputs (BF16 tensor cores on GPUs), FLOP/s.
  double matmul_flops_per_s = 0;
  // Dense matmul peak for 32- and 64-bit inputs (TF32 tensor cores on GPUs, as PyTorch uses with
  // allow_tf32; SGEMM on a CPU), FLOP/s.
  double matmul_fp32_flops_per_s = 0;
  // Peak for everything that is not matmul-like (FP32 CUDA-core rate on GPUs), FLOP/s.
  double vector_flops_per_s = 0;
  double memory_bytes_per_s = 0;     // main memory (HBM) bandwidth, bytes moved per second
  double memory_capacity_bytes = 0;  // per device
  // A cluster of these devices: `devices_per_node` consecutive ranks share a node and talk over
  // `intra_node_link`; rings that leave a node run at `inter_node_link`.
  int64_t devices_per_node = 8;
  dist::LinkProfile intra_node_link;
  dist::LinkProfile inter_node_link;
  // Calibrated ops, keyed by op_timing_key (op name and dtype); empty for published-peak profiles.
  std::map<std::string, OpTiming> op_timings;
  double op_overhead_s = 0;  // added to the roofline of every op without a timing

  // ValueError naming the profile and the field when a rate, bandwidth or capacity is not
  // positive and finite, or devices_per_node < 1.
  void validate() const;
};

// H100 SXM5 80 GB: 989 TFLOP/s BF16, 495 TF32, 67 FP32; 3.35 TB/s HBM3; NVLink4 + NDR400.
DeviceProfile h100();
// H200 SXM 141 GB: the H100's compute; 4.8 TB/s HBM3e; NVLink4 + NDR400.
DeviceProfile h200();
// A100 SXM4 80 GB: 312 TFLOP/s BF16, 156 TF32, 19.5 FP32; 2.04 TB/s HBM2e; NVLink3 + HDR200.
DeviceProfile a100();
// A reference CPU, not the machine the program runs on: the 2-core AVX-512 development machine
// as measured on 2026-12-03 (docs/benchmarks.md; figures in device_profile.cpp), one rank per
// core, with its SGEMM rate, memcpy bandwidth and the threads and MPI backends' fitted links.
// Fixed numbers keep plans the same on every machine; `parallax calibrate` measures the machine
// at hand and writes a profile of it.
DeviceProfile reference_cpu();

// A profile by name: "h100", "h200", "a100", "cpu" (reference_cpu), a profile's own name
// ("h100-sxm"), or the path of a profile saved as JSON (a name ending in .json). ValueError
// listing the names for an unknown one, or naming the file and field of a bad file.
DeviceProfile device_profile(std::string_view name);

// JSON: every field above, links by their alpha and beta, op timings by key.
std::string device_profile_json(const DeviceProfile& device);
// ParseError naming `source`, the line and column and the JSON path of text that is not JSON or
// of a missing or bad field; ValueError naming `source` when the values fail validate().
DeviceProfile device_profile_from_json(std::string_view text, std::string_view source = "device profile");

// "matmul:f32": what DeviceProfile::op_timings is keyed by.
std::string op_timing_key(std::string_view op, DType dtype);
// device_profile_from_json of a file's contents; ValueError naming the file when it cannot be read.
DeviceProfile load_device_profile(std::string_view path);
// The topology of `mesh` on a cluster of these devices: MeshTopology::cluster with the
// profile's devices_per_node and links (an 8x8 mesh of H100s: dim 0 InfiniBand, dim 1 NVLink).
dist::MeshTopology cluster_topology(const dist::DeviceMesh& mesh, const DeviceProfile& device);

// The roofline time of an op with this cost: max(flops / peak, bytes / bandwidth). `matmul_like`
// picks the matmul peak (16-bit or 32-bit by `dtype`, the op's input dtype) over the vector peak.
double roofline_seconds(const OpCost& cost, bool matmul_like, DType dtype, const DeviceProfile& device);

// The cost `op`'s cost facet reports for these (local) metas.
OpCost op_cost(const OpDef& op, const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
               const Attrs& attrs);
// The dtype an op is priced at: that of input 0 (of output 0 when it has no inputs).
DType op_dtype(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs);
// The time of an op with this cost on `device`: its calibrated timing if the profile has one for
// (op, dtype), else the roofline plus the profile's op_overhead_s.
double priced_seconds(std::string_view op, const OpCost& cost, bool matmul_like, DType dtype,
                      const DeviceProfile& device);

// priced_seconds of `op` on these (local) metas, with op_cost and op_dtype.
double op_seconds(const OpDef& op, const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                  const Attrs& attrs, const DeviceProfile& device);

}  // namespace px::plan

// Device profiles and the roofline (see plan/device_profile.h).
//
// Sources of the GPU figures (NVIDIA datasheets, SXM form factor; the datasheets quote
// tensor-core rates "with sparsity", twice the dense rates used here):
//   H100: "NVIDIA H100 Tensor Core GPU" datasheet (H100 SXM column): FP32 67 TFLOPS, TF32
//         989 TFLOPS sparse (494.7 dense), BF16 1,979 TFLOPS sparse (989.4 dense), 80 GB HBM3
//         at 3.35 TB/s.
//   H200: "NVIDIA H200 Tensor Core GPU" datasheet (H200 SXM column): the same compute as H100
//         SXM, 141 GB HBM3e at 4.8 TB/s.
//   A100: "NVIDIA A100 Tensor Core GPU" datasheet (A100 80GB SXM column): FP32 19.5 TFLOPS,
//         TF32 156 TFLOPS dense, BF16 312 TFLOPS dense, 80 GB HBM2e at 2,039 GB/s.
// Links: dist/comm_cost.h's named profiles, 8 GPUs per node (HGX/DGX boards).

#include "parallax/plan/device_profile.h"

#include <algorithm>
#include <cmath>

#include "parallax/core/error.h"
#include "parallax/dtensor/redistribute.h"

namespace px::plan {

namespace {

DeviceProfile gpu(std::string name, double bf16, double tf32, double fp32, double bandwidth, double capacity,
                  dist::LinkProfile intra, dist::LinkProfile inter) {
  return DeviceProfile{.name = std::move(name),
                       .matmul_flops_per_s = bf16,
                       .matmul_fp32_flops_per_s = tf32,
                       .vector_flops_per_s = fp32,
                       .memory_bytes_per_s = bandwidth,
                       .memory_capacity_bytes = capacity,
                       .devices_per_node = 8,
                       .intra_node_link = std::move(intra),
                       .inter_node_link = std::move(inter),
                       .op_timings = {},
                       .op_overhead_s = 0};
}

void require_positive(const DeviceProfile& device, const char* field, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw ValueError("device profile '" + device.name + "': " + field + " must be positive and finite, got " +
                     std::to_string(value));
  }
}

}  // namespace

void DeviceProfile::validate() const {
  require_positive(*this, "matmul_flops_per_s", matmul_flops_per_s);
  require_positive(*this, "matmul_fp32_flops_per_s", matmul_fp32_flops_per_s);
  require_positive(*this, "vector_flops_per_s", vector_flops_per_s);
  require_positive(*this, "memory_bytes_per_s", memory_bytes_per_s);
  require_positive(*this, "memory_capacity_bytes", memory_capacity_bytes);
  if (devices_per_node < 1) {
    throw ValueError("device profile '" + name + "': devices_per_node must be >= 1, got " +
                     std::to_string(devices_per_node));
  }
}

DeviceProfile h100() {
  return gpu("h100-sxm", 989.4e12, 494.7e12, 66.9e12, 3.35e12, 80e9, dist::nvlink4_h100(), dist::infiniband_ndr400());
}

DeviceProfile h200() {
  return gpu("h200-sxm", 989.4e12, 494.7e12, 66.9e12, 4.8e12, 141e9, dist::nvlink4_h200(), dist::infiniband_ndr400());
}

DeviceProfile a100() {
  return gpu("a100-sxm-80gb", 312e12, 156e12, 19.5e12, 2.039e12, 80e9, dist::nvlink3_a100(), dist::infiniband_hdr200());
}

// The development machine's figures, from docs/benchmarks.md, "Ops vs BLAS and memcpy", run 3 (2026-12-03, idle
// machine, one BLAS thread per rank, OpenBLAS Haswell kernels):
//   - SGEMM: 113.8 GFLOP/s at 1024^3 through the matmul op (112.1 direct). The CPU kernels have no
//     faster 16-bit path, so the 16-bit matmul rate is the same figure.
//   - memcpy: 25.5 GB/s of bytes moved (read + written) on 16 MiB float32.
//   - vector rate: gelu (exact) is compute-bound on this CPU; it moved 7.2 GB/s, i.e. 0.9e9
//     float32 elements/s (8 bytes each), at the 15 FLOPs per element its cost facet counts:
//     13.5 GFLOP/s in the cost model's own FLOPs.
//   - capacity: the machine's 24 GiB shared by its 2 cores, one rank per core.
// Links: the threads backend between the ranks of one process (one "node" of 2 ranks), the MPI
// backend beyond it, both fitted to this machine's collectives benchmark.
DeviceProfile reference_cpu() {
  return DeviceProfile{.name = "reference-cpu",
                       .matmul_flops_per_s = 113.8e9,
                       .matmul_fp32_flops_per_s = 113.8e9,
                       .vector_flops_per_s = 13.5e9,
                       .memory_bytes_per_s = 25.5e9,
                       .memory_capacity_bytes = 12.0 * 1024 * 1024 * 1024,
                       .devices_per_node = 2,
                       .intra_node_link = threads_backend_profile(),
                       .inter_node_link = mpi_backend_profile(),
                       .op_timings = {},
                       .op_overhead_s = 0};
}

DeviceProfile device_profile(std::string_view name) {
  if (name.ends_with(".json")) return load_device_profile(name);
  for (DeviceProfile profile : {h100(), h200(), a100(), reference_cpu()}) {
    // "h100" for "h100-sxm"; "cpu" and "reference" for "reference-cpu".
    const std::string short_name = profile.name.substr(0, profile.name.find('-'));
    if (name == profile.name || name == short_name || (name == "cpu" && profile.name == "reference-cpu"))
      return profile;
  }
  throw ValueError("unknown device profile '" + std::string(name) +
                   "' (h100, h200, a100, cpu, or a profile file ending in .json)");
}

dist::MeshTopology cluster_topology(const dist::DeviceMesh& mesh, const DeviceProfile& device) {
  return dist::MeshTopology::cluster(mesh, device.devices_per_node, device.intra_node_link, device.inter_node_link);
}

double roofline_seconds(const OpCost& cost, bool matmul_like, DType dtype, const DeviceProfile& device) {
  double peak = device.vector_flops_per_s;
  if (matmul_like) peak = dtype == DType::BFloat16 ? device.matmul_flops_per_s : device.matmul_fp32_flops_per_s;
  double compute = cost.flops / peak;
  double memory = (cost.bytes_read + cost.bytes_written) / device.memory_bytes_per_s;
  return std::max(compute, memory);
}

std::string op_timing_key(std::string_view op, DType dtype) {
  return std::string(op) + ":" + std::string(dtype_name(dtype));
}

OpCost op_cost(const OpDef& op, const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
               const Attrs& attrs) {
  return op.cost(inputs, outputs, attrs);  // every registered op has one (Registry::add checks)
}

DType op_dtype(const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs) {
  return !inputs.empty() ? inputs.front().dtype : (!outputs.empty() ? outputs.front().dtype : DType::Float32);
}

double priced_seconds(std::string_view op, const OpCost& cost, bool matmul_like, DType dtype,
                      const DeviceProfile& device) {
  if (!device.op_timings.empty()) {
    auto it = device.op_timings.find(op_timing_key(op, dtype));
    if (it != device.op_timings.end()) return it->second.seconds(cost);
  }
  return roofline_seconds(cost, matmul_like, dtype, device) + device.op_overhead_s;
}

double op_seconds(const OpDef& op, const std::vector<TensorMeta>& inputs, const std::vector<TensorMeta>& outputs,
                  const Attrs& attrs, const DeviceProfile& device) {
  return priced_seconds(op.name, op_cost(op, inputs, outputs, attrs), op.traits.matmul_like, op_dtype(inputs, outputs),
                        device);
}

}  // namespace px::plan

// Device profiles as JSON: how a calibrated profile (plan/calibration.h) is saved and reused.

#include <nlohmann/json.hpp>
#include <string>

#include "core/json_reader.h"
#include "parallax/core/error.h"
#include "parallax/plan/device_profile.h"
#include "plan/file_io.h"

namespace px::plan {

namespace {

constexpr const char* kFormat = "parallax-device-profile";

nlohmann::ordered_json link_json(const dist::LinkProfile& link) {
  return {{"name", link.name}, {"alpha_s", link.alpha_s}, {"beta_bytes_per_s", link.beta_bytes_per_s}};
}

dist::LinkProfile read_link(const JsonValue& link) {
  return dist::LinkProfile{link.text("name"), link.number("alpha_s"), link.number("beta_bytes_per_s")};
}

}  // namespace

std::string device_profile_json(const DeviceProfile& device) {
  nlohmann::ordered_json timings = nlohmann::ordered_json::object();
  for (const auto& [key, timing] : device.op_timings) {
    timings[key] = {{"per_call_s", timing.per_call_s}, {"per_flop_s", timing.per_flop_s},
                    {"per_byte_s", timing.per_byte_s}, {"samples", timing.samples},
                    {"max_flops", timing.max_flops},   {"max_bytes", timing.max_bytes}};
  }
  nlohmann::ordered_json json = {{"format", kFormat},
                                 {"version", 1},
                                 {"name", device.name},
                                 {"matmul_flops_per_s", device.matmul_flops_per_s},
                                 {"matmul_fp32_flops_per_s", device.matmul_fp32_flops_per_s},
                                 {"vector_flops_per_s", device.vector_flops_per_s},
                                 {"memory_bytes_per_s", device.memory_bytes_per_s},
                                 {"memory_capacity_bytes", device.memory_capacity_bytes},
                                 {"devices_per_node", device.devices_per_node},
                                 {"intra_node_link", link_json(device.intra_node_link)},
                                 {"inter_node_link", link_json(device.inter_node_link)},
                                 {"op_overhead_s", device.op_overhead_s},
                                 {"op_timings", timings}};
  return json.dump(2) + "\n";
}

DeviceProfile device_profile_from_json(std::string_view text, std::string_view source) {
  const JsonReader reader{std::string(text), std::string(source), "profile"};
  const JsonValue root = reader.root();
  if (!root.has("format") || root.raw().at("format") != kFormat) {
    root.fail(std::string("not a Parallax device profile (no \"format\": \"") + kFormat + "\")");
  }
  if (root.integer("version") != 1) root.fail_at("version", "unsupported version " + root.raw().at("version").dump());
  DeviceProfile device;
  device.name = root.text("name");
  device.matmul_flops_per_s = root.number("matmul_flops_per_s");
  device.matmul_fp32_flops_per_s = root.number("matmul_fp32_flops_per_s");
  device.vector_flops_per_s = root.number("vector_flops_per_s");
  device.memory_bytes_per_s = root.number("memory_bytes_per_s");
  device.memory_capacity_bytes = root.number("memory_capacity_bytes");
  device.devices_per_node = root.integer("devices_per_node");
  device.intra_node_link = read_link(root.object("intra_node_link"));
  device.inter_node_link = read_link(root.object("inter_node_link"));
  device.op_overhead_s = root.number("op_overhead_s");
  if (device.op_overhead_s < 0) root.fail_at("op_overhead_s", "must be >= 0");
  for (const auto& [key, entry] : root.object("op_timings").members()) {
    if (!entry.raw().is_object()) entry.fail("expected an object");
    OpTiming timing{.per_call_s = entry.number("per_call_s"),
                    .per_flop_s = entry.number("per_flop_s"),
                    .per_byte_s = entry.number("per_byte_s"),
                    .samples = entry.integer("samples"),
                    .max_flops = entry.number("max_flops"),
                    .max_bytes = entry.number("max_bytes")};
    if (timing.per_call_s < 0 || timing.per_flop_s < 0 || timing.per_byte_s < 0) {
      entry.fail("coefficients must be >= 0");
    }
    device.op_timings.emplace(key, timing);
  }
  try {
    device.validate();
  } catch (const ValueError& error) {
    error.rethrow_with_context(std::string(source) + ": ");
  }
  return device;
}

DeviceProfile load_device_profile(std::string_view path) {
  const std::string file(path);
  return device_profile_from_json(read_text_file(file), file);
}

}  // namespace px::plan

// Device profiles as JSON: how a calibrated profile (plan/calibration.h) is saved and reused.

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "parallax/core/error.h"
#include "parallax/plan/device_profile.h"
#include "plan/file_io.h"

namespace px::plan {

namespace {

constexpr const char* kFormat = "parallax-device-profile";

nlohmann::ordered_json link_json(const dist::LinkProfile& link) {
  return {{"name", link.name}, {"alpha_s", link.alpha_s}, {"beta_bytes_per_s", link.beta_bytes_per_s}};
}

// Reads fields of one JSON object, naming the source and the object's path in every error.
class Reader {
 public:
  Reader(const nlohmann::json& object, std::string source, std::string path)
      : object_(object), source_(std::move(source)), path_(std::move(path)) {
    if (!object_.is_object()) fail("expected an object");
  }

  const nlohmann::json& at(const char* key) const {
    if (!object_.contains(key)) fail(std::string("missing \"") + key + "\"");
    return object_.at(key);
  }
  double number(const char* key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_number() || !std::isfinite(value.get<double>())) fail(field(key) + "expected a finite number");
    return value.get<double>();
  }
  int64_t integer(const char* key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_number_integer()) fail(field(key) + "expected an integer");
    return value.get<int64_t>();
  }
  std::string text(const char* key) const {
    const nlohmann::json& value = at(key);
    if (!value.is_string()) fail(field(key) + "expected a string");
    return value.get<std::string>();
  }
  Reader object(const char* key) const { return Reader(at(key), source_, path_ + "." + key); }
  const nlohmann::json& raw() const { return object_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& message) const {
    throw ValueError(source_ + ": " + path_ + ": " + message);
  }

 private:
  std::string field(const char* key) const { return std::string(".") + key + ": "; }
  const nlohmann::json& object_;
  std::string source_;
  std::string path_;
};

dist::LinkProfile read_link(const Reader& reader) {
  return dist::LinkProfile{reader.text("name"), reader.number("alpha_s"), reader.number("beta_bytes_per_s")};
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
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw ValueError(std::string(source) + ": malformed JSON: " + error.what());
  }
  const Reader reader(root, std::string(source), "profile");
  if (!root.contains("format") || root["format"] != kFormat) {
    reader.fail(std::string("not a Parallax device profile (no \"format\": \"") + kFormat + "\")");
  }
  if (reader.integer("version") != 1) reader.fail("unsupported version " + root["version"].dump());
  DeviceProfile device;
  device.name = reader.text("name");
  device.matmul_flops_per_s = reader.number("matmul_flops_per_s");
  device.matmul_fp32_flops_per_s = reader.number("matmul_fp32_flops_per_s");
  device.vector_flops_per_s = reader.number("vector_flops_per_s");
  device.memory_bytes_per_s = reader.number("memory_bytes_per_s");
  device.memory_capacity_bytes = reader.number("memory_capacity_bytes");
  device.devices_per_node = reader.integer("devices_per_node");
  device.intra_node_link = read_link(reader.object("intra_node_link"));
  device.inter_node_link = read_link(reader.object("inter_node_link"));
  device.op_overhead_s = reader.number("op_overhead_s");
  if (device.op_overhead_s < 0) reader.fail(".op_overhead_s: must be >= 0");
  const Reader timings = reader.object("op_timings");
  for (const auto& [key, value] : timings.raw().items()) {
    const Reader entry(value, reader.source(), timings.path() + "." + key);
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

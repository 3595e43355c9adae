#include "parallax/io/hf_model.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "parallax/core/error.h"
#include "parallax/io/hf_weights.h"
#include "parallax/io/safetensors.h"

namespace px::io {

namespace fs = std::filesystem;

bool has_hf_weights(const std::string& dir) {
  std::error_code error;
  return fs::is_regular_file(fs::path(dir) / "model.safetensors", error) ||
         fs::is_regular_file(fs::path(dir) / "model.safetensors.index.json", error);
}

void load_hf_weights(nn::Module& model, const nn::ModelSpec& spec, const std::string& dir, const std::string& prefix) {
  SafetensorsDir files = SafetensorsDir::open(dir);
  const std::string where = "Hugging Face weights in '" + dir + "'";
  auto available = [&](const std::string& name) { return files.contains(name); };
  std::map<std::string, nn::ParameterGroup> groups;  // by every name of the group
  for (nn::ParameterGroup& group : model.parameter_groups()) {
    for (const std::string& fqn : group.fqns) groups[fqn] = group;
  }
  std::vector<std::pair<const nn::ParameterGroup*, Tensor>> loaded;
  std::set<std::string> used;
  for (const HfParameter& entry : hf_parameter_map(spec)) {
    const std::string name = prefix + entry.name;
    const auto group = groups.find(name);
    if (group == groups.end()) throw ValueError(where + ": the model has no parameter '" + name + "'");
    const std::string hf_name = resolve_hf_name(entry.source.hf_name, available);
    if (!files.contains(hf_name)) {
      throw ValueError(where + ": no tensor '" + entry.source.hf_name + "' (for " + name + ")");
    }
    used.insert(hf_name);
    Tensor value = to_parallax(entry.source, files.read(hf_name));
    const Tensor& slot = group->second.tensor;
    if (value.shape() != slot.shape()) {
      throw ValueError(where + ": '" + hf_name + "' gives " + name + " the shape " + shape_str(value.shape()) +
                       ", but the config makes it " + shape_str(slot.shape()));
    }
    if (value.dtype() != slot.dtype()) value = value.to(slot.dtype());
    loaded.emplace_back(&group->second, value);
  }
  for (const std::string& name : files.names()) {
    if (!used.contains(name) && !is_hf_buffer(name)) {
      throw ValueError(where + ": tensor '" + name + "' has no place in " + spec.architecture +
                       " as the config describes it");
    }
  }
  for (const auto& [group, value] : loaded) {
    for (Tensor* slot : group->slots) *slot = value;  // every name of a tied tensor
  }
}

void save_hf_model(const std::string& dir, const nn::ModelSpec& spec,
                   const std::function<Tensor(const std::string&)>& parameter, int64_t max_shard_bytes) {
  const std::string config = hf_config_json(spec);
  const std::vector<std::pair<std::string, Tensor>> tensors = to_hf(spec, parameter);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) throw ValueError("save_hf_model: cannot create '" + dir + "': " + error.message());
  write_sharded_safetensors(dir, tensors, max_shard_bytes, {{"format", "pt"}});
  const fs::path path = fs::path(dir) / "config.json";
  std::ofstream out(path);
  out << config;
  if (!out.flush()) throw ValueError("save_hf_model: cannot write '" + path.string() + "'");
}

}  // namespace px::io

// ParallelModule::save and ::load: sharded checkpoints that reshard on load (docs/checkpoint.md).
//
// Every saved tensor is a set of blocks, each a box of the global tensor (offset, shape) held by
// one rank's file. A block is written by one rank only: the one at coordinate 0 of every mesh dim
// the tensor is replicated over. Loading intersects this rank's box with every saved block and
// reads just the intersections, so any mesh and plan can load any other's checkpoint.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "parallax/core/error.h"
#include "parallax/dist/process_group.h"
#include "parallax/dist/sharding.h"
#include "parallax/io/safetensors.h"
#include "parallax/kernels/copy.h"
#include "parallax/ops/factory.h"
#include "parallax/runtime/parallel_module.h"

namespace px {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kMetadataFile = "checkpoint.json";
constexpr const char* kFormat = "parallax.checkpoint";
constexpr int kVersion = 1;

std::string rank_file(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05d.safetensors", rank);
  return name;
}

// A checkpoint's name for optimizer state `state` of parameter `fqn`.
std::string optimizer_key(const std::string& state, const std::string& fqn) { return "optimizer/" + state + "/" + fqn; }

// True when the rank at `coordinate` writes its block of a tensor placed so: it is the first of
// the ranks that hold the same block.
bool writes_block(const std::vector<Placement>& placements, const std::vector<int64_t>& coordinate) {
  for (size_t d = 0; d < placements.size(); ++d) {
    if (!std::holds_alternative<Shard>(placements[d]) && coordinate[d] != 0) return false;
  }
  return true;
}

void write_text_atomically(const fs::path& path, const std::string& text) {
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw ValueError("checkpoint: cannot write '" + path.string() + "'");
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) throw ValueError("checkpoint: cannot rename '" + temporary.string() + "': " + error.message());
}

// Writes `src` (a contiguous block) into the sub-box of `dst` (contiguous) at `offset`.
void copy_into(Tensor& dst, const Shape& offset, const Tensor& src) {
  Tensor view = dst;
  for (size_t d = 0; d < offset.size(); ++d) {
    view = view.narrow(static_cast<int64_t>(d), offset[d], src.shape()[d]);
  }
  kernels::copy_strided(src.shape(), {src.raw_data(), src.dtype(), src.strides()},
                        {view.raw_data(), view.dtype(), view.strides()});
}

}  // namespace

void ParallelModule::save(const std::string& dir) const {
  dist::ProcessGroup& world = groups_->world();
  const dist::DeviceMesh& mesh = groups_->mesh();
  const fs::path root(dir);
  // Rank 0 retires the old checkpoint.json first, so that a save that stops part way cannot leave
  // an old index over a mix of old and new rank files; a fresh id ties the files to this save.
  Tensor save_id = px::full({}, 0.0, DType::Int64);
  if (world.rank() == 0) {
    std::error_code error;
    fs::create_directories(root, error);
    if (error) throw ValueError("checkpoint: cannot create '" + dir + "': " + error.message());
    fs::remove(root / kMetadataFile, error);
    save_id = px::full(
        {}, static_cast<double>(std::chrono::system_clock::now().time_since_epoch().count() % (int64_t{1} << 52)),
        DType::Int64);
  }
  world.broadcast(save_id, 0);
  const std::string id = std::to_string(save_id.item<int64_t>());

  // This rank's blocks, and (on rank 0) every rank's, computed from the placements alone.
  const std::vector<int64_t> my_coordinate = lowered_.coordinate;
  std::vector<std::pair<std::string, Tensor>> mine;
  json tensors = json::object();
  auto describe = [&](const std::string& key, const std::string& role, size_t input, const Tensor& local) {
    const std::vector<Placement>& placements = lowered_.input_placements[input];
    const TensorMeta& global = lowered_.global_inputs[input];
    if (writes_block(placements, my_coordinate)) mine.emplace_back(key, local);
    if (world.rank() != 0) return;
    json blocks = json::array();
    for (int rank : mesh.ranks()) {
      const std::vector<int64_t> coordinate = mesh.coordinate(rank);
      if (!writes_block(placements, coordinate)) continue;
      const dist::LocalShard shard = dist::local_shard(global.shape, placements, mesh, coordinate);
      blocks.push_back({{"file", rank_file(rank)}, {"offset", shard.offset}, {"shape", shard.shape}});
    }
    tensors[key] = {{"role", role},
                    {"dtype", std::string(dtype_name(local.dtype()))},
                    {"shape", global.shape},
                    {"placements", placements_str(placements)},
                    {"blocks", blocks}};
  };
  std::vector<int64_t> optimizer_of(joint_->inputs.size(), -1);
  for (size_t k = 0; k < trained_.size(); ++k) optimizer_of[trained_[k]] = static_cast<int64_t>(k);
  for (size_t i = 0; i < joint_->inputs.size(); ++i) {
    const InputDescriptor& input = joint_->inputs[i];
    if (!input.is_param_or_buffer()) continue;
    const std::string& fqn = input.fqns.front();
    describe(fqn, input.kind == InputDescriptor::Kind::Param ? "parameter" : "buffer", i, state_[i]);
    if (optimizer_of[i] < 0) continue;
    const auto k = static_cast<size_t>(optimizer_of[i]);
    for (const auto& [state, tensor] : optimizer_->state_tensors(k)) {
      describe(optimizer_key(state, fqn), "optimizer", i, tensor);
    }
    if (world.rank() == 0) tensors[fqn]["optimizer_steps"] = optimizer_->steps_taken(k);
  }

  world.barrier();  // the directory exists and the old index is gone before anyone writes
  io::write_safetensors((root / rank_file(world.rank())).string(), mine, {{"save_id", id}});
  world.barrier();  // every rank file is in place before the index names them
  if (world.rank() != 0) return;
  json metadata = {{"format", kFormat},     {"version", kVersion},
                   {"save_id", id},         {"step", steps_},
                   {"seed", options_.seed}, {"optimizer", std::string(optimizer_->name())},
                   {"mesh", mesh.shape()},  {"mesh_dim_names", mesh.dim_names()},
                   {"tensors", tensors}};
  write_text_atomically(root / kMetadataFile, metadata.dump(1) + "\n");
}

int64_t ParallelModule::load(const std::string& dir) {
  const fs::path root(dir);
  const std::string where = "checkpoint '" + dir + "'";
  std::ifstream in(root / kMetadataFile);
  if (!in) {
    throw ValueError(where + ": no " + std::string(kMetadataFile) +
                     " (not a checkpoint, or a save that did not finish)");
  }
  json metadata;
  try {
    metadata = json::parse(in);
  } catch (const json::exception& error) {
    throw ValueError(where + ": " + kMetadataFile + " is not valid JSON: " + error.what());
  }
  if (!metadata.is_object() || metadata.value("format", "") != kFormat || metadata.value("version", 0) != kVersion) {
    throw ValueError(where + ": " + kMetadataFile + " is not a " + kFormat + " version " + std::to_string(kVersion));
  }
  if (!metadata.contains("tensors") || !metadata.at("tensors").is_object() || !metadata.contains("save_id") ||
      !metadata.at("save_id").is_string() || !metadata.contains("optimizer") || !metadata.at("optimizer").is_string()) {
    throw ValueError(where + ": " + kMetadataFile + " lacks tensors, save_id or optimizer");
  }
  const json& tensors = metadata.at("tensors");
  const std::string id = metadata.at("save_id").get<std::string>();
  const std::string saved_optimizer = metadata.at("optimizer").get<std::string>();
  int64_t steps_loaded = 0;
  if (saved_optimizer != optimizer_->name()) {
    throw ValueError(where + ": saved with " + saved_optimizer + " state; this module trains with " +
                     std::string(optimizer_->name()));
  }

  std::unordered_map<std::string, io::SafetensorsFile> files;
  auto file = [&](const std::string& name) -> io::SafetensorsFile& {
    auto found = files.find(name);
    if (found != files.end()) return found->second;
    io::SafetensorsFile opened = io::SafetensorsFile::open((root / name).string());
    auto saved_id = opened.metadata().find("save_id");
    if (saved_id == opened.metadata().end() || saved_id->second != id) {
      throw ValueError(where + ": " + name + " is not from the save " + kMetadataFile + " describes");
    }
    return files.emplace(name, std::move(opened)).first->second;
  };
  // Fills this rank's block of `key` (global meta `global`, placed as input `input`) into `local`.
  auto restore = [&](const std::string& key, size_t input, Tensor local) {
    if (!tensors.contains(key)) throw ValueError(where + ": holds no tensor '" + key + "'");
    const json& entry = tensors.at(key);
    const TensorMeta& global = lowered_.global_inputs[input];
    const Shape shape = entry.at("shape").get<Shape>();
    const std::string dtype = entry.at("dtype").get<std::string>();
    if (shape != global.shape || dtype != dtype_name(local.dtype())) {
      throw ValueError(where + ": '" + key + "' is " + dtype + shape_str(shape) + " there but " +
                       std::string(dtype_name(local.dtype())) + shape_str(global.shape) + " in this model");
    }
    const dist::LocalShard mine =
        dist::local_shard(global.shape, lowered_.input_placements[input], groups_->mesh(), lowered_.coordinate);
    int64_t covered = 0;
    for (const json& block : entry.at("blocks")) {
      const Shape offset = block.at("offset").get<Shape>(), extent = block.at("shape").get<Shape>();
      std::vector<std::pair<int64_t, int64_t>> ranges;  // within the saved block
      Shape at;                                         // within this rank's block
      int64_t volume = 1;
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t begin = std::max(offset[d], mine.offset[d]);
        const int64_t end = std::min(offset[d] + extent[d], mine.offset[d] + mine.shape[d]);
        volume *= std::max<int64_t>(end - begin, 0);
        ranges.emplace_back(begin - offset[d], end - offset[d]);
        at.push_back(begin - mine.offset[d]);
      }
      if (volume == 0 && !shape.empty()) continue;
      const Tensor part = file(block.at("file").get<std::string>()).read_slice(key, ranges);
      copy_into(local, at, part);
      covered += volume;
    }
    if (covered != numel(mine.shape)) {
      throw ValueError(where + ": the blocks of '" + key + "' do not cover this rank's shard " + shape_str(mine.shape) +
                       " at " + shape_str(mine.offset));
    }
  };

  std::vector<int64_t> optimizer_of(joint_->inputs.size(), -1);
  for (size_t k = 0; k < trained_.size(); ++k) optimizer_of[trained_[k]] = static_cast<int64_t>(k);
  // Restores into copies first: a checkpoint that fails half way leaves the module as it was.
  std::vector<Tensor> state(state_.size());
  std::vector<std::vector<Tensor>> optimizer_state(trained_.size());
  std::vector<int64_t> optimizer_steps(trained_.size(), 0);
  try {
    for (size_t i = 0; i < joint_->inputs.size(); ++i) {
      const InputDescriptor& input = joint_->inputs[i];
      if (!input.is_param_or_buffer()) continue;
      const std::string& fqn = input.fqns.front();
      state[i] = Tensor::empty(state_[i].shape(), state_[i].dtype());
      restore(fqn, i, state[i]);
      if (optimizer_of[i] < 0) continue;
      const auto k = static_cast<size_t>(optimizer_of[i]);
      for (const auto& [name, tensor] : optimizer_->state_tensors(k)) {
        optimizer_state[k].push_back(Tensor::empty(tensor.shape(), tensor.dtype()));
        restore(optimizer_key(name, fqn), i, optimizer_state[k].back());
      }
      optimizer_steps[k] = tensors.at(fqn).value("optimizer_steps", int64_t{0});
    }
    steps_loaded = metadata.at("step").get<int64_t>();
  } catch (const json::exception& error) {
    throw ValueError(where + ": " + kMetadataFile + " is malformed: " + error.what());
  }
  // Everything read: now into the module, in place (the optimizer holds the same tensors).
  for (size_t i = 0; i < state.size(); ++i) {
    if (state[i].defined()) copy_into(state_[i], Shape(state_[i].dim(), 0), state[i]);
  }
  for (size_t k = 0; k < trained_.size(); ++k) {
    const auto targets = optimizer_->state_tensors(k);
    for (size_t s = 0; s < targets.size(); ++s) {
      Tensor target = targets[s].second;
      copy_into(target, Shape(target.dim(), 0), optimizer_state[k][s]);
    }
    optimizer_->restore_steps(k, optimizer_steps[k]);
  }
  steps_ = steps_loaded;
  int64_t bytes = 0;
  for (const auto& [name, opened] : files) bytes += opened.bytes_read();
  return bytes;
}

}  // namespace px

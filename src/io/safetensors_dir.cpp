// SafetensorsDir: a Hugging Face model directory, one file or shards behind an index.

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/safetensors_detail.h"
#include "parallax/io/safetensors.h"

namespace px::io {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

struct IndexEntry {
  std::string tensor;
  std::string file;
};

// weight_map's entries in the index's order; ValueError naming the index for anything but an
// object whose weight_map maps names to plain file names of the directory.
std::vector<IndexEntry> read_index(const std::string& index_path) {
  std::ifstream in(index_path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw ValueError(index_path + ": cannot read the index");
  nlohmann::ordered_json index;
  try {
    index = nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::ordered_json::exception& error) {
    throw ValueError(index_path + ": not valid JSON: " + error.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw ValueError(index_path + ": not an index: it needs an object {\"weight_map\": {tensor name: file name}}");
  }
  if (index.contains("metadata") && !index["metadata"].is_object()) {
    throw ValueError(index_path + ": 'metadata' is not an object");
  }
  std::vector<IndexEntry> entries;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    // Shards live beside the index: a path elsewhere would read files outside the checkpoint.
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos || file.get<std::string>() == "." ||
        file.get<std::string>() == "..") {
      throw ValueError(index_path + ": weight_map puts tensor '" + tensor + "' in " + file.dump() +
                       ", not a file name in the directory");
    }
    entries.push_back({tensor, file.get<std::string>()});
  }
  return entries;
}

}  // namespace

SafetensorsDir::SafetensorsDir(std::string dir, std::vector<SafetensorsFile> files, std::vector<std::string> names,
                               std::unordered_map<std::string, size_t> file_of)
    : dir_(std::move(dir)), files_(std::move(files)), names_(std::move(names)), file_of_(std::move(file_of)) {}

SafetensorsDir SafetensorsDir::open(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw ValueError(dir + ": not a directory");
  const std::string single = (fs::path(dir) / kSingleFile).string();
  const std::string index_path = (fs::path(dir) / kIndexFile).string();
  const bool has_single = fs::exists(single, error);
  const bool has_index = fs::exists(index_path, error);
  if (has_single && has_index) {
    throw ValueError(dir + ": holds both " + kSingleFile + " and " + kIndexFile + " (remove the one that is stale)");
  }
  if (!has_single && !has_index) {
    throw ValueError(dir + ": holds neither " + kSingleFile + " nor " + kIndexFile);
  }
  std::vector<SafetensorsFile> files;
  std::vector<std::string> names;
  std::unordered_map<std::string, size_t> file_of;
  if (has_single) {
    files.push_back(SafetensorsFile::open(single));
    names = files.front().names();
    for (const std::string& name : names) file_of.emplace(name, 0);
    return SafetensorsDir(dir, std::move(files), std::move(names), std::move(file_of));
  }

  std::unordered_map<std::string, size_t> file_position;
  for (const IndexEntry& entry : read_index(index_path)) {
    auto [at, is_new] = file_position.emplace(entry.file, files.size());
    if (is_new) {
      const std::string path = (fs::path(dir) / entry.file).string();
      if (!fs::exists(path, error)) {
        throw ValueError(index_path + ": weight_map puts tensor '" + entry.tensor + "' in '" + entry.file +
                         "', which does not exist");
      }
      files.push_back(SafetensorsFile::open(path));
    }
    const SafetensorsFile& file = files[at->second];
    if (!file.contains(entry.tensor)) {
      throw ValueError(index_path + ": weight_map puts tensor '" + entry.tensor + "' in '" + entry.file +
                       "', which does not hold it" + detail::close_names_note(entry.tensor, file.names()));
    }
    file_of.emplace(entry.tensor, at->second);
  }
  for (size_t f = 0; f < files.size(); ++f) {
    for (const std::string& name : files[f].names()) {
      const auto found = file_of.find(name);
      if (found != file_of.end() && found->second == f) names.push_back(name);
    }
  }
  return SafetensorsDir(dir, std::move(files), std::move(names), std::move(file_of));
}

const TensorInfo& SafetensorsDir::info(const std::string& name) const {
  const auto found = file_of_.find(name);
  if (found == file_of_.end()) {
    throw ValueError(dir_ + ": no tensor '" + name + "' among the checkpoint's " + std::to_string(names_.size()) +
                     " tensors" + detail::close_names_note(name, names_));
  }
  return files_[found->second].info(name);
}

SafetensorsFile& SafetensorsDir::file_holding(const std::string& name) {
  info(name);  // the error for a missing tensor
  return files_[file_of_.at(name)];
}

Tensor SafetensorsDir::read(const std::string& name) { return file_holding(name).read(name); }

Tensor SafetensorsDir::read_slice(const std::string& name, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  return file_holding(name).read_slice(name, ranges);
}

int64_t SafetensorsDir::bytes_read() const {
  int64_t total = 0;
  for (const SafetensorsFile& file : files_) total += file.bytes_read();
  return total;
}

}  // namespace px::io

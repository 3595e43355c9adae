// A deterministic mutation fuzzer for the safetensors reader: valid files, mutated the ways
// corrupt or hostile files differ (flipped bits, cut or grown bytes, lying numbers in the header,
// swapped dtypes), then opened and read in full and in slices. The only allowed outcomes are a
// result or a px::Error: any other exception fails the test, and a crash or a sanitizer report
// (in the PARALLAX_SANITIZE build) ends it.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>

#include "parallax/core/error.h"
#include "parallax/io/safetensors.h"
#include "parallax/ops/factory.h"
#include "support/test_util.h"

namespace px::io {
namespace {

namespace fs = std::filesystem;

// The body of a libFuzzer target (LLVMFuzzerTestOneInput): any bytes, as a whole file in memory.
void parse_any_bytes(const uint8_t* data, size_t size) {
  try {
    parse_safetensors_header(std::as_bytes(std::span(data, size)), static_cast<int64_t>(size), "fuzz input");
  } catch (const px::Error&) {
    // the expected answer to most inputs
  }
}

std::string file_bytes(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(out.data(), &length, sizeof(length));
  return out + header + data;
}

// Valid files to start from, written by write_safetensors and by hand (dtypes Parallax cannot
// read, scalars, empty tensors).
std::vector<std::string> seed_files(const std::string& scratch) {
  std::vector<std::string> seeds;
  write_safetensors(scratch,
                    {{"embed.weight", testing::random_tensor({6, 4}, DType::Float32, 1)},
                     {"layers.0.bias", testing::random_tensor({4}, DType::BFloat16, 2)},
                     {"mask", Tensor::from_vector({1, 0, 1}, {3}, DType::Bool)},
                     {"step", Tensor::scalar(3, DType::Int64)},
                     {"w64", testing::random_tensor({2, 3, 2}, DType::Float64, 3)}},
                    {{"format", "pt"}});
  seeds.push_back(testing::slurp(scratch));
  write_safetensors(scratch, {{"h", testing::random_tensor({3, 5}, DType::Float32, 4)}}, {},
                    {.float_storage = FloatStorage::Float16});
  seeds.push_back(testing::slurp(scratch));
  seeds.push_back(file_bytes(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
                             R"("e":{"dtype":"F32","shape":[0,5],"data_offsets":[8,8]},)"
                             R"("q":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[8,12]},)"
                             R"("u":{"dtype":"U8","shape":[],"data_offsets":[12,13]}})",
                             std::string("\x01\0\0\0\x02\0\0\0\x10\x20\x30\x40\x7f", 13)));
  seeds.push_back(file_bytes(R"({"x":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", std::string(16, '\x3f')));
  return seeds;
}

// Mutates `bytes` once, in one of the ways below, chosen by `rng`.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  void mutate(std::string& bytes) {
    switch (pick(10)) {
      case 0:
        flip_bit(bytes);
        break;
      case 1:
        overwrite(bytes);
        break;
      case 2:
        bytes.resize(pick(bytes.size() + 1));
        break;
      case 3:
        bytes.insert(pick(bytes.size() + 1), random_bytes(1 + pick(16)));
        break;
      case 4:
        erase(bytes);
        break;
      case 5:
        edit_header_number(bytes);
        break;
      case 6:
        swap_dtype(bytes);
        break;
      case 7:
        set_header_length(bytes);
        break;
      case 8:
        insert_json_token(bytes);
        break;
    }
  }

 private:
  size_t pick(size_t bound) { return bound == 0 ? 0 : std::uniform_int_distribution<size_t>(0, bound - 1)(rng_); }
  bool coin() { return pick(2) == 0; }

  std::string random_bytes(size_t count) {
    std::string out(count, '\0');
    for (char& c : out) c = static_cast<char>(pick(256));
    return out;
  }

  void flip_bit(std::string& bytes) {
    if (!bytes.empty()) bytes[pick(bytes.size())] ^= static_cast<char>(1 << pick(8));
  }
  void overwrite(std::string& bytes) {
    for (size_t n = 1 + pick(4); n > 0 && !bytes.empty(); --n) bytes[pick(bytes.size())] = static_cast<char>(pick(256));
  }
  void erase(std::string& bytes) {
    if (bytes.empty()) return;
    const size_t at = pick(bytes.size());
    bytes.erase(at, 1 + pick(std::min<size_t>(32, bytes.size() - at)));
  }

  // [8, 8 + N) clipped to what the bytes hold: where the JSON is, if the length is still sane.
  std::pair<size_t, size_t> header_span(const std::string& bytes) {
    if (bytes.size() < 8) return {0, 0};
    uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    return {8, 8 + static_cast<size_t>(std::min<uint64_t>(length, bytes.size() - 8))};
  }
  // Replaces bytes [at, at + count) of the header and, half the time, keeps N in step with the
  // header's new length (so that the change reaches the JSON parser rather than the length check).
  void splice_header(std::string& bytes, size_t at, size_t count, const std::string& text) {
    bytes.replace(at, count, text);
    if (coin()) {
      uint64_t length = 0;
      std::memcpy(&length, bytes.data(), 8);
      length += text.size() - count;
      std::memcpy(bytes.data(), &length, 8);
    }
  }

  void edit_header_number(std::string& bytes) {
    const auto [begin, end] = header_span(bytes);
    std::vector<std::pair<size_t, size_t>> numbers;  // [start, length) of each digit run
    for (size_t i = begin; i < end; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(bytes[i]))) continue;
      size_t j = i;
      while (j < end && std::isdigit(static_cast<unsigned char>(bytes[j]))) ++j;
      numbers.emplace_back(i, j - i);
      i = j;
    }
    if (numbers.empty()) return;
    static constexpr const char* kNumbers[] = {"0",
                                               "1",
                                               "2",
                                               "3",
                                               "7",
                                               "8",
                                               "9",
                                               "15",
                                               "16",
                                               "17",
                                               "64",
                                               "255",
                                               "4096",
                                               "-1",
                                               "-0",
                                               "1.5",
                                               "1e3",
                                               "1e400",
                                               "2147483648",
                                               "4294967296",
                                               "9223372036854775807",
                                               "9223372036854775808",
                                               "18446744073709551615",
                                               "18446744073709551616",
                                               "4611686018427387904",
                                               "99999999999999999999999"};
    const auto [at, count] = numbers[pick(numbers.size())];
    const std::string current = bytes.substr(at, count);
    std::string replacement = kNumbers[pick(std::size(kNumbers))];
    if (coin() && count < 19) replacement = std::to_string(std::stoll(current) + static_cast<int64_t>(pick(5)) - 2);
    splice_header(bytes, at, count, replacement);
  }

  void swap_dtype(std::string& bytes) {
    static constexpr const char* kDTypes[] = {"F32", "F64",     "F16", "BF16",    "I64", "I32", "BOOL",
                                              "U8",  "F8_E4M3", "F4",  "F6_E2M3", "C64", "X",   ""};
    const auto [begin, end] = header_span(bytes);
    const std::string header = bytes.substr(begin, end - begin);
    const size_t key = header.find("\"dtype\":\"", pick(header.size() + 1));
    if (key == std::string::npos) return;
    const size_t value = key + 9;
    const size_t close = header.find('"', value);
    if (close == std::string::npos) return;
    splice_header(bytes, begin + value, close - value, kDTypes[pick(std::size(kDTypes))]);
  }

  void set_header_length(std::string& bytes) {
    if (bytes.size() < 8) return;
    uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    const uint64_t choices[] = {
        0,           1,           length - 1,   length + 1,       length + 8, bytes.size() - 8, bytes.size(),
        100'000'000, 100'000'001, ~uint64_t{0}, uint64_t{1} << 63};
    length = choices[pick(std::size(choices))];
    std::memcpy(bytes.data(), &length, 8);
  }

  void insert_json_token(std::string& bytes) {
    static constexpr const char* kTokens[] = {"{",
                                              "}",
                                              "[",
                                              "]",
                                              ",",
                                              ":",
                                              "\"",
                                              "null",
                                              "true",
                                              "[[[[",
                                              "\\u0000",
                                              "\"__metadata__\":{}",
                                              "\"shape\":[1],",
                                              "\xc3\x28",
                                              " "};
    const auto [begin, end] = header_span(bytes);
    if (end <= begin) return;
    splice_header(bytes, begin + pick(end - begin), coin() ? 0 : 1, kTokens[pick(std::size(kTokens))]);
  }

  // Moves one tensor's data_offsets, keeping its size, so that tensors overlap or leave holes.
  void shift_offsets(std::string& bytes) {
    const auto [begin, end] = header_span(bytes);
    const std::string header = bytes.substr(begin, end - begin);
    const std::string key = "\"data_offsets\":[";
    const size_t found = header.find(key, pick(header.size() + 1));
    if (found == std::string::npos) return;
    const size_t numbers = found + key.size();
    const size_t close = header.find(']', numbers);
    long long first = 0;
    long long last = 0;
    if (close == std::string::npos || std::sscanf(header.c_str() + numbers, "%lld,%lld", &first, &last) != 2) return;
    const long long shift = std::max(-first, static_cast<long long>(pick(17)) - 8);
    splice_header(bytes, begin + numbers, close - numbers,
                  std::to_string(first + shift) + "," + std::to_string(last + shift));
  }

  std::mt19937_64 rng_;
};

// Opens the file and reads every tensor whole and in a random slice; a px::Error anywhere is a
// fine answer, and what comes back must agree with the header.
void open_and_read_everything(const std::string& path, std::mt19937_64& rng) {
  try {
    SafetensorsFile file = SafetensorsFile::open(path);
    int64_t covered = 0;
    for (const TensorInfo& tensor : file.header().tensors) covered += tensor.nbytes();
    ASSERT_EQ(file.header().data_start + covered, static_cast<int64_t>(fs::file_size(path)));
    for (const std::string& name : file.names()) {
      try {
        const Tensor whole = file.read(name);
        ASSERT_EQ(whole.shape(), file.info(name).shape);
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (int64_t extent : whole.shape()) {
          const int64_t start = std::uniform_int_distribution<int64_t>(0, extent)(rng);
          ranges.emplace_back(start, std::uniform_int_distribution<int64_t>(start, extent)(rng));
        }
        const Tensor slice = file.read_slice(name, ranges);
        for (size_t d = 0; d < ranges.size(); ++d) {
          ASSERT_EQ(slice.size(static_cast<int64_t>(d)), ranges[d].second - ranges[d].first);
        }
      } catch (const px::Error&) {
        // a dtype Parallax cannot read: the other tensors are still read
      }
    }
  } catch (const px::Error&) {
  }
}

TEST(SafetensorsFuzz, MutatedFilesReadOrRaisePxErrors) {
  const std::string path = testing::temp_path("fuzz.safetensors");
  const std::vector<std::string> seeds = seed_files(path);
  constexpr uint64_t kSeed = 20240611;
  constexpr int kIterations = 3000;
  Mutator mutator(kSeed);
  std::mt19937_64 rng(kSeed + 1);
  int opened = 0;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    std::string bytes = seeds[static_cast<size_t>(iteration) % seeds.size()];
    const int mutations = 1 + iteration % 3;
    for (int m = 0; m < mutations; ++m) mutator.mutate(bytes);
    SCOPED_TRACE("seed " + std::to_string(kSeed) + ", iteration " + std::to_string(iteration));
    try {
      parse_any_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      testing::spit(path, bytes);
      open_and_read_everything(path, rng);
      try {
        SafetensorsFile::open(path);
        ++opened;
      } catch (const px::Error&) {
      }
    } catch (const std::exception& error) {
      FAIL() << "not a px::Error: " << error.what();
    }
    if (::testing::Test::HasFatalFailure()) break;
  }
  fs::remove(path);
  // The mutations must leave some files valid, or the fuzzer only ever tests the first checks.
  EXPECT_GT(opened, kIterations / 20);
  EXPECT_LT(opened, kIterations);
}

TEST(SafetensorsFuzz, RandomBytesNeverEscapeAsAnythingButPxErrors) {
  std::mt19937_64 rng(7);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    std::string bytes(std::uniform_int_distribution<size_t>(0, 64)(rng), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (bytes.size() >= 8 && iteration % 2 == 0) {
      const uint64_t length = bytes.size() - 8;  // a sane length: the JSON parser sees the rest
      std::memcpy(bytes.data(), &length, 8);
      bytes[8 % bytes.size()] = '{';
    }
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    EXPECT_NO_THROW(parse_any_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
}

TEST(SafetensorsFuzz, MutatedIndexReadsOrRaisesPxErrors) {
  const std::string dir = testing::temp_path("sharded");
  fs::remove_all(dir);
  write_sharded_safetensors(dir,
                            {{"a", arange(0, 4, 1, DType::Float32)},
                             {"b", arange(0, 4, 1, DType::Float32)},
                             {"c", arange(0, 2, 1, DType::Int64)}},
                            16);
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  const std::string index = testing::slurp(index_path);
  std::mt19937_64 rng(11);
  for (int iteration = 0; iteration < 300; ++iteration) {
    std::string text = index;
    for (int m = 0; m < 1 + iteration % 3; ++m) {
      const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(rng);
      if (rng() % 2) {
        text[at] = "{}[]\",:./0123abcz"[rng() % 17];
      } else {
        text.erase(at, 1 + rng() % 8);
      }
      if (text.empty()) text = "x";
    }
    testing::spit(index_path, text);
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    try {
      SafetensorsDir checkpoint = SafetensorsDir::open(dir);
      for (const std::string& name : checkpoint.names()) checkpoint.read(name);
    } catch (const px::Error&) {
    } catch (const std::exception& error) {
      ADD_FAILURE() << "not a px::Error: " << error.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace px::io

// Safetensors: round trips for every dtype, the bytes of a file built by hand from the spec (so
// that we read and write what other implementations do), slices that read only their bytes, the
// sharded form, every malformed file named by path and tensor, and atomic writes.

#include "parallax/io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "parallax/core/error.h"
#include "parallax/ops/factory.h"
#include "support/test_util.h"

namespace px::io {
namespace {

namespace fs = std::filesystem;
using testing::error_message;
using ::testing::HasSubstr;

// A directory of this test's own (unique per process and test), removed at the end.
class TempDir {
 public:
  TempDir() : path_(testing::temp_path("dir")) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }
  const std::string& path() const { return path_; }
  // Names in the directory, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

// A safetensors file's bytes: the 8-byte little-endian length, the header padded with spaces to
// a multiple of 8 (unless told not to), then the data.
std::string file_bytes(std::string header, const std::string& data, bool pad = true) {
  if (pad) header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(out.data(), &length, sizeof(length));
  return out + header + data;
}

std::vector<double> values_of(const Tensor& tensor) {
  std::vector<double> out;
  for (int64_t i = 0; i < tensor.numel(); ++i) out.push_back(element_as_double(tensor, i));
  return out;
}

Tensor arange_f32(const Shape& shape) {
  return arange(0, static_cast<double>(numel(shape)), 1, DType::Float32).reshape(shape);
}

TEST(Safetensors, RoundTripsEveryDTypeInOrderWithMetadata) {
  TempDir dir;
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"z.f32", testing::random_tensor({3, 4}, DType::Float32, 1)},
      {"a.f64", testing::non_contiguous(testing::random_tensor({2, 5}, DType::Float64, 2))},
      {"m.i64", testing::random_ints({7}, -1'000'000'000'000, 1'000'000'000'000, 3)},
      {"b.bool", Tensor::from_vector({1, 0, 0, 1, 1}, {5}, DType::Bool)},
      {"c.bf16", testing::random_tensor({2, 3, 2}, DType::BFloat16, 4)},
      {"scalar", Tensor::scalar(2.5, DType::Float64)},
      {"empty", Tensor::empty({0, 3}, DType::Float32)},
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"step", "12"}};
  write_safetensors(dir.file("m.safetensors"), tensors, metadata);

  SafetensorsFile file = SafetensorsFile::open(dir.file("m.safetensors"));
  EXPECT_EQ(file.names(), (std::vector<std::string>{"z.f32", "a.f64", "m.i64", "b.bool", "c.bf16", "scalar", "empty"}));
  EXPECT_EQ(file.metadata(), metadata);
  EXPECT_EQ(file.info("c.bf16").dtype, "BF16");
  EXPECT_EQ(file.info("b.bool").dtype, "BOOL");
  EXPECT_EQ(file.header().data_start % 8, 0);
  for (const auto& [name, expected] : tensors) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(file.contains(name));
    const Tensor got = file.read(name);
    EXPECT_EQ(got.dtype(), expected.dtype());
    EXPECT_EQ(got.shape(), expected.shape());
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_EQ(values_of(got), values_of(expected));  // exact: nothing is rounded
  }
  EXPECT_FALSE(file.contains("nope"));
}

TEST(Safetensors, MatchesAFileBuiltByHandFromTheSpec) {
  TempDir dir;
  // N = 56 (54 bytes of JSON, 2 of padding), then 1.5f and -2.0f little-endian.
  const std::string by_hand = std::string("\x38\0\0\0\0\0\0\0", 8) +
                              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )" +
                              std::string("\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8);
  testing::spit(dir.file("hand.safetensors"), by_hand);
  SafetensorsFile file = SafetensorsFile::open(dir.file("hand.safetensors"));
  EXPECT_EQ(values_of(file.read("a")), (std::vector<double>{1.5, -2.0}));

  write_safetensors(dir.file("ours.safetensors"), {{"a", Tensor::from_vector({1.5, -2.0}, {2})}});
  EXPECT_EQ(testing::slurp(dir.file("ours.safetensors")), by_hand);

  // With metadata (first, as the reference writer puts it) and an I64 scalar: N = 144.
  const std::string with_metadata =
      std::string("\x90\0\0\0\0\0\0\0", 8) +
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)" +
      R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}}      )" +
      std::string("\x00\x00\xc0\x3f\x00\x00\x00\xc0\x07\0\0\0\0\0\0\0", 16);
  write_safetensors(dir.file("meta.safetensors"),
                    {{"a", Tensor::from_vector({1.5, -2.0}, {2})}, {"b", Tensor::scalar(7, DType::Int64)}},
                    {{"format", "pt"}});
  EXPECT_EQ(testing::slurp(dir.file("meta.safetensors")), with_metadata);
}

// The binary16 value of `bits`, computed from the definition rather than by bit moves.
double half_reference(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent = (bits >> 10) & 0x1f;
  const int mantissa = bits & 0x3ff;
  if (exponent == 0x1f) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(Safetensors, ReadsEveryFloat16ValueExactlyAndWritesItBack) {
  TempDir dir;
  std::string data(2 * 65536, '\0');
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    std::memcpy(data.data() + 2 * bits, &half, 2);
  }
  testing::spit(dir.file("all.safetensors"),
                file_bytes(R"({"h":{"dtype":"F16","shape":[65536],"data_offsets":[0,131072]}})", data));
  SafetensorsFile file = SafetensorsFile::open(dir.file("all.safetensors"));
  const Tensor widened = file.read("h");
  ASSERT_EQ(widened.dtype(), DType::Float32);
  const float* values = widened.data<float>();
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const double expected = half_reference(static_cast<uint16_t>(bits));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(values[bits])) << bits;
    } else {
      ASSERT_EQ(values[bits], expected) << bits;
      ASSERT_EQ(std::signbit(values[bits]), bool(bits & 0x8000)) << bits;  // -0 stays -0
    }
  }
  // Every representable value rounds to itself, so storing them as F16 gives the same bytes
  // (NaNs aside: they stay NaN, with the payload of a quiet one).
  write_safetensors(dir.file("back.safetensors"), {{"h", widened}}, {}, {.float_storage = FloatStorage::Float16});
  SafetensorsFile back = SafetensorsFile::open(dir.file("back.safetensors"));
  EXPECT_EQ(back.info("h").dtype, "F16");
  const Tensor again = back.read("h");
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    if (std::isnan(values[bits])) continue;
    ASSERT_EQ(std::bit_cast<uint32_t>(again.data<float>()[bits]), std::bit_cast<uint32_t>(values[bits])) << bits;
  }
}

TEST(Safetensors, StoresFloatsAsFloat16RoundingToNearestEven) {
  TempDir dir;
  const double tiny = std::ldexp(1.0, -24);  // the smallest subnormal
  const std::vector<double> given = {1.0,
                                     1.0 + std::ldexp(1.0, -11),      // a tie: to even, 1
                                     1.0 + 3 * std::ldexp(1.0, -11),  // a tie: to even, 1 + 2^-9
                                     65504.0,                         // the largest finite
                                     65520.0,                         // halfway to the next: inf
                                     -1e6,
                                     tiny,
                                     tiny / 2,                         // a tie with 0: to even, 0
                                     tiny * 0.75,                      // above the tie: tiny
                                     tiny * 1.5,                       // a tie: to even, 2 * tiny
                                     std::ldexp(1.0, -14) - tiny / 2,  // rounds up into the normals
                                     -0.0};
  const std::vector<double> expected = {
      1.0,  1.0,      1.0 + std::ldexp(1.0, -9), 65504.0, INFINITY, -INFINITY, tiny, 0.0,
      tiny, 2 * tiny, std::ldexp(1.0, -14),      -0.0};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    write_safetensors(dir.file("h.safetensors"), {{"x", Tensor::from_vector(given, {12}, dtype)}}, {},
                      {.float_storage = FloatStorage::Float16});
    SafetensorsFile file = SafetensorsFile::open(dir.file("h.safetensors"));
    EXPECT_EQ(file.info("x").nbytes(), 24);
    EXPECT_EQ(values_of(file.read("x")), expected);
    EXPECT_TRUE(std::signbit(file.read("x").data<float>()[11]));
  }
  // Other dtypes are stored as themselves; BF16 storage rounds as BFloat16 does.
  const Tensor floats = testing::random_tensor({9}, DType::Float32, 5, -100, 100);
  write_safetensors(dir.file("b.safetensors"), {{"f", floats}, {"i", Tensor::from_vector({3, 4}, {2}, DType::Int64)}},
                    {}, {.float_storage = FloatStorage::BFloat16});
  SafetensorsFile file = SafetensorsFile::open(dir.file("b.safetensors"));
  EXPECT_EQ(file.info("f").dtype, "BF16");
  EXPECT_EQ(file.info("i").dtype, "I64");
  EXPECT_EQ(values_of(file.read("f")), values_of(floats.to(DType::BFloat16)));
}

class SafetensorsSlice : public ::testing::Test {
 protected:
  void SetUp() override { write_safetensors(dir_.file("w.safetensors"), {{"pre", arange_f32({5})}, {"w", whole_}}); }
  TempDir dir_;
  Tensor whole_ = arange_f32({4, 6, 8});
  const int64_t whole_bytes_ = 4 * 6 * 8 * 4;
};

TEST_F(SafetensorsSlice, Dim0ReadsExactlyTheSliceBytes) {
  SafetensorsFile file = SafetensorsFile::open(dir_.file("w.safetensors"));
  EXPECT_EQ(file.bytes_read(), 0);
  const Tensor slice = file.read_slice("w", {{1, 3}, {0, 6}, {0, 8}});
  EXPECT_EQ(slice.shape(), (Shape{2, 6, 8}));
  EXPECT_EQ(values_of(slice), values_of(whole_.slice(0, 1, 3)));
  EXPECT_EQ(file.bytes_read(), 2 * 6 * 8 * 4);
}

TEST_F(SafetensorsSlice, MiddleAndLastDimsReadOnlyTheirRuns) {
  SafetensorsFile file = SafetensorsFile::open(dir_.file("w.safetensors"));
  const Tensor middle = file.read_slice("w", {{0, 4}, {2, 5}, {0, 8}});
  EXPECT_EQ(values_of(middle), values_of(whole_.slice(1, 2, 5)));
  EXPECT_EQ(file.bytes_read(), 4 * 3 * 8 * 4);
  EXPECT_LT(file.bytes_read(), whole_bytes_);

  const int64_t before = file.bytes_read();
  const Tensor last = file.read_slice("w", {{0, 4}, {0, 6}, {3, 7}});
  EXPECT_EQ(values_of(last), values_of(whole_.slice(2, 3, 7)));
  EXPECT_EQ(file.bytes_read() - before, 4 * 6 * 4 * 4);
  EXPECT_LT(file.bytes_read() - before, whole_bytes_);

  const Tensor corner = file.read_slice("w", {{3, 4}, {1, 2}, {7, 8}});
  EXPECT_EQ(values_of(corner), (std::vector<double>{3 * 48 + 8 + 7}));
  const Tensor none = file.read_slice("w", {{2, 2}, {0, 6}, {0, 8}});
  EXPECT_EQ(none.shape(), (Shape{0, 6, 8}));

  const int64_t before_whole = file.bytes_read();
  EXPECT_EQ(values_of(file.read("w")), values_of(whole_));
  EXPECT_EQ(file.bytes_read() - before_whole, whole_bytes_);
}

TEST_F(SafetensorsSlice, BadRangesAreNamed) {
  SafetensorsFile file = SafetensorsFile::open(dir_.file("w.safetensors"));
  const std::string path = dir_.file("w.safetensors");
  EXPECT_EQ(error_message([&] {
              file.read_slice("w", {{0, 4}, {0, 6}});
            }),
            "ValueError: " + path +
                ": tensor 'w': read_slice got 2 ranges for F32 [4, 6, 8]; it takes one [start, stop) per dim (3)");
  EXPECT_EQ(error_message([&] {
              file.read_slice("w", {{0, 4}, {5, 7}, {0, 8}});
            }),
            "ValueError: " + path +
                ": tensor 'w': slice [5, 7) of dim 1 is not within [0, 6] (needs 0 <= start <= stop <= 6)");
  EXPECT_THAT(error_message([&] {
                file.read_slice("w", {{3, 2}, {0, 6}, {0, 8}});
              }),
              HasSubstr("slice [3, 2) of dim 0"));
  EXPECT_THAT(error_message([&] { file.read_slice("w", {{-1, 2}, {0, 6}, {0, 8}}); }), HasSubstr("slice [-1, 2)"));
  EXPECT_EQ(file.bytes_read(), 0);
}

TEST(Safetensors, SlicesConvertFloat16AndBool) {
  TempDir dir;
  const Tensor halves = Tensor::from_vector({0.5, 1, 1.5, 2, 2.5, 3}, {2, 3});
  const Tensor flags = Tensor::from_vector({1, 0, 1, 1, 0, 0}, {3, 2}, DType::Bool);
  write_safetensors(dir.file("s.safetensors"), {{"h", halves}, {"b", flags}}, {},
                    {.float_storage = FloatStorage::Float16});
  SafetensorsFile file = SafetensorsFile::open(dir.file("s.safetensors"));
  EXPECT_EQ(values_of(file.read_slice("h", {{0, 2}, {1, 3}})), (std::vector<double>{1, 1.5, 2.5, 3}));
  EXPECT_EQ(values_of(file.read_slice("b", {{1, 3}, {0, 1}})), (std::vector<double>{1, 0}));
}

TEST(Safetensors, BoolBytesOtherThanOneReadAsTrue) {
  TempDir dir;
  testing::spit(dir.file("b.safetensors"), file_bytes(R"({"b":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                                                      std::string("\x00\x02\xff", 3)));
  SafetensorsFile file = SafetensorsFile::open(dir.file("b.safetensors"));
  EXPECT_EQ(file.read("b").to_vector<bool>(), (std::vector<bool>{false, true, true}));
}

TEST(Safetensors, ShardedDirectoryRoundTrip) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 7; ++i) {
    tensors.emplace_back("layers." + std::to_string(i) + ".weight",
                         testing::random_tensor({4, 3 + i}, DType::Float32, static_cast<uint64_t>(i)));
  }
  tensors.emplace_back("tok.ids", testing::random_ints({10}, 0, 100, 9));
  int64_t total = 0;
  for (const auto& [name, tensor] : tensors) total += tensor.numel() * dtype_size(tensor.dtype());
  write_sharded_safetensors(dir.path(), tensors, 256, {{"format", "pt"}});

  // 48, 64, 80 | 96, 112 | 128 | 144, 80 bytes: shards of at most 256, in order.
  EXPECT_EQ(dir.listing(),
            (std::vector<std::string>{"model-00001-of-00004.safetensors", "model-00002-of-00004.safetensors",
                                      "model-00003-of-00004.safetensors", "model-00004-of-00004.safetensors",
                                      "model.safetensors.index.json"}));
  const auto index = nlohmann::json::parse(testing::slurp(dir.file("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], total);
  EXPECT_EQ(index["weight_map"]["layers.2.weight"], "model-00001-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["layers.3.weight"], "model-00002-of-00004.safetensors");
  EXPECT_EQ(index["weight_map"]["tok.ids"], "model-00004-of-00004.safetensors");

  SafetensorsDir checkpoint = SafetensorsDir::open(dir.path());
  EXPECT_EQ(checkpoint.files().size(), 4u);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) names.push_back(name);
  EXPECT_EQ(checkpoint.names(), names);
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    EXPECT_EQ(checkpoint.info(name).shape, tensor.shape());
    EXPECT_EQ(values_of(checkpoint.read(name)), values_of(tensor));
  }
  EXPECT_EQ(checkpoint.bytes_read(), total);
  EXPECT_EQ(checkpoint.files()[2].metadata().at("format"), "pt");
  const Tensor rows = checkpoint.read_slice("layers.6.weight", {{1, 3}, {0, 9}});
  EXPECT_EQ(values_of(rows), values_of(tensors[6].second.slice(0, 1, 3)));
  EXPECT_EQ(checkpoint.bytes_read(), total + 2 * 9 * 4);

  // Rewritten small enough for one file: model.safetensors alone, the shards and index removed.
  write_sharded_safetensors(dir.path(), tensors, 1 << 20);
  EXPECT_EQ(dir.listing(), (std::vector<std::string>{"model.safetensors"}));
  SafetensorsDir single = SafetensorsDir::open(dir.path());
  EXPECT_EQ(single.names(), names);
  EXPECT_EQ(values_of(single.read("tok.ids")), values_of(tensors.back().second));
}

// --- malformed files: each error names the file and, where there is one, the tensor ---

class SafetensorsBadFile : public ::testing::Test {
 protected:
  // The ValueError that opening (and reading every tensor of) a file with these bytes raises.
  std::string open_error(const std::string& bytes) {
    testing::spit(path_, bytes);
    return error_message([&] {
      SafetensorsFile file = SafetensorsFile::open(path_);
      for (const std::string& name : file.names()) file.read(name);
    });
  }
  std::string error_of_header(const std::string& header, const std::string& data) {
    return open_error(file_bytes(header, data));
  }
  TempDir dir_;
  std::string path_ = dir_.file("model.safetensors");
};

TEST_F(SafetensorsBadFile, Truncated) {
  write_safetensors(path_, {{"h.0.attn.weight", arange_f32({4, 8})}});
  const std::string good = testing::slurp(path_);
  EXPECT_EQ(open_error(good.substr(0, 5)),
            "ValueError: " + path_ +
                ": the file is 5 bytes, too short for the 8-byte header length a safetensors file "
                "starts with");
  EXPECT_THAT(open_error(good.substr(0, 40)),
              HasSubstr(path_ + ": header length 72 runs past the end of the file (40 bytes)"));
  EXPECT_EQ(open_error(good.substr(0, good.size() - 4)),
            "ValueError: " + path_ +
                ": tensor 'h.0.attn.weight': data_offsets [0, 128] end past the data buffer, which is 124 bytes: the "
                "file is truncated or its header lies");
}

TEST_F(SafetensorsBadFile, TruncatedAfterOpenIsAnErrorNotAPartialTensor) {
  write_safetensors(path_, {{"a", arange_f32({4})}, {"w", arange_f32({16, 16})}});
  SafetensorsFile file = SafetensorsFile::open(path_);
  fs::resize_file(path_, static_cast<uintmax_t>(file.header().data_start + 16 + 100));
  EXPECT_EQ(values_of(file.read("a")), (std::vector<double>{0, 1, 2, 3}));
  const std::string message = error_message([&] { file.read("w"); });
  EXPECT_THAT(message, HasSubstr(path_ + ": tensor 'w': the file ends at byte "));
  EXPECT_THAT(message, HasSubstr("truncated after it was opened"));
  EXPECT_THAT(error_message([&] { file.read_slice("w", {{8, 16}, {0, 16}}); }), HasSubstr("tensor 'w'"));
}

TEST_F(SafetensorsBadFile, HeaderLiesAboutSizes) {
  EXPECT_EQ(error_of_header(R"({"h.0.attn.weight":{"dtype":"F32","shape":[4,8],"data_offsets":[0,96]}})",
                            std::string(96, '\0')),
            "ValueError: " + path_ +
                ": tensor 'h.0.attn.weight': data_offsets [0, 96] span 96 bytes but F32 [4, 8] "
                "needs 128");
  std::string huge(8, '\0');
  const uint64_t length = 200'000'000;
  std::memcpy(huge.data(), &length, 8);
  EXPECT_EQ(open_error(huge + "{}"),
            "ValueError: " + path_ +
                ": header length 200000000 is over the limit of 100000000 bytes (a corrupt file, "
                "or not safetensors)");
  EXPECT_THAT(error_of_header(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", ""),
              HasSubstr(path_ + ": tensor 'x': F32 [4611686018427387904, 4] has more bytes than 64 bits can count"));
  EXPECT_THAT(error_of_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", std::string(8, '\0')),
              HasSubstr("tensor 'x': data_offsets [8, 0] end before they begin"));
}

TEST_F(SafetensorsBadFile, OverlapsHolesAndUncoveredBytes) {
  EXPECT_EQ(error_of_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            std::string(12, '\0')),
            "ValueError: " + path_ + ": tensors 'a' [0, 8] and 'b' [4, 12] overlap");
  EXPECT_EQ(
      error_of_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
                      std::string(16, '\0')),
      "ValueError: " + path_ + ": bytes [8, 12) of the data buffer belong to no tensor (a hole before tensor 'b')");
  EXPECT_EQ(error_of_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(12, '\0')),
            "ValueError: " + path_ +
                ": the data buffer is 12 bytes but the tensors cover 8 (4 bytes after the last "
                "tensor belong to none)");
}

TEST_F(SafetensorsBadFile, UnknownAndUnreadableDTypes) {
  EXPECT_EQ(error_of_header(R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
            "ValueError: " + path_ + ": tensor 'w': unknown dtype 'F33'");
  // A valid file with a dtype Parallax has no type for: it opens, and reading names the dtype.
  testing::spit(path_, file_bytes(R"({"w":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')));
  SafetensorsFile file = SafetensorsFile::open(path_);
  EXPECT_EQ(
      error_message([&] { file.read("w"); }),
      "ValueError: " + path_ +
          ": tensor 'w': dtype I32 has no Parallax dtype (readable: F32, F64, BF16, I64, BOOL, and F16 as float32)");
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", std::string(2, '\0')),
              HasSubstr("tensor 'w': F4 [3] is 12 bits, not a whole number of bytes"));
}

TEST_F(SafetensorsBadFile, MissingTensorListsCloseNames) {
  write_safetensors(
      path_,
      {{"h.0.attn.weight", arange_f32({2})}, {"h.1.attn.weight", arange_f32({2})}, {"wte.weight", arange_f32({2})}});
  SafetensorsFile file = SafetensorsFile::open(path_);
  EXPECT_EQ(error_message([&] { file.info("h.0.attn.weigth"); }),
            "ValueError: " + path_ +
                ": no tensor 'h.0.attn.weigth' among its 3 tensors; close names: 'h.0.attn.weight', "
                "'h.1.attn.weight'");
  EXPECT_EQ(error_message([&] { file.read("zzz"); }), "ValueError: " + path_ + ": no tensor 'zzz' among its 3 tensors");
}

TEST_F(SafetensorsBadFile, StrictHeaderJson) {
  const std::string data(4, '\0');
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_THAT(error_of_header(R"({"w":)" + entry + R"(,"w":)" + entry + "}", data),
              HasSubstr(path_ + ": header JSON has the key 'w' twice in one object"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data),
              HasSubstr("key 'dtype' twice"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", data),
              HasSubstr(path_ + ": tensor 'w': unexpected key 'extra'"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F32","shape":[1]}})", data),
              HasSubstr("tensor 'w': no 'data_offsets' in the entry"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", data),
              HasSubstr("tensor 'w': shape[0] is -1, not a non-negative 64-bit integer"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", data),
              HasSubstr("tensor 'w': shape[0] is 1.0, not a non-negative 64-bit integer"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", data),
              HasSubstr("tensor 'w': data_offsets [0, 4, 8] is not [begin, end]"));
  EXPECT_THAT(error_of_header(R"({"w":{"dtype":32,"shape":[1],"data_offsets":[0,4]}})", data),
              HasSubstr("tensor 'w': dtype is 32, not a string"));
  EXPECT_THAT(error_of_header(R"({"w":[1]})", data), HasSubstr("tensor 'w': entry is [1], not an object"));
  EXPECT_THAT(error_of_header(R"({"__metadata__":{"step":12}})", ""),
              HasSubstr(path_ + ": __metadata__['step'] is 12; metadata values are strings"));
  EXPECT_THAT(error_of_header(R"([1,2])", ""), HasSubstr(path_ + ": the header does not start with '{'"));
  EXPECT_THAT(error_of_header(R"( {})", ""), HasSubstr("does not start with '{'"));
  EXPECT_THAT(error_of_header(R"({"w":)", ""), HasSubstr(path_ + ": header is not valid JSON"));
  EXPECT_THAT(error_of_header(R"({"w":{"shape":[[1]]}})", ""), HasSubstr("nests deeper than a safetensors header can"));
  // Padding is spaces after the object; anything else after it is not JSON.
  EXPECT_THAT(open_error(file_bytes(std::string(R"({}xx)"), "", false)), HasSubstr("header is not valid JSON"));
  EXPECT_EQ(open_error(file_bytes("{}", "", false)), "(no error)");
}

TEST(Safetensors, BadIndexIsNamed) {
  TempDir dir;
  write_sharded_safetensors(dir.path(), {{"a", arange_f32({4})}, {"b", arange_f32({4})}}, 16);
  const std::string index = dir.file("model.safetensors.index.json");
  const std::string good = testing::slurp(index);
  ASSERT_NO_THROW(SafetensorsDir::open(dir.path()));

  testing::spit(index, R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
                       R"("b":"model-00009-of-00009.safetensors"}})");
  EXPECT_EQ(error_message([&] { SafetensorsDir::open(dir.path()); }),
            "ValueError: " + index +
                ": weight_map puts tensor 'b' in 'model-00009-of-00009.safetensors', which does "
                "not exist");
  testing::spit(index,
                R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors"}})");
  EXPECT_EQ(error_message([&] { SafetensorsDir::open(dir.path()); }),
            "ValueError: " + index +
                ": weight_map puts tensor 'b' in 'model-00001-of-00002.safetensors', which does "
                "not hold it; close names: 'a'");
  testing::spit(index, R"({"weight_map":{"a":"../model-00001-of-00002.safetensors"}})");
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.path()); }),
              HasSubstr(index + ": weight_map puts tensor 'a' in \"../model-00001-of-00002.safetensors\", not a file"));
  testing::spit(index, R"({"weight_map":)");
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.path()); }), HasSubstr(index + ": not valid JSON"));
  testing::spit(index, R"({"weights":{}})");
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.path()); }), HasSubstr(index + ": not an index"));

  // A shard that is itself broken is named by its own path.
  testing::spit(index, good);
  testing::spit(dir.file("model-00002-of-00002.safetensors"), "garbage!");
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.path()); }),
              HasSubstr(dir.file("model-00002-of-00002.safetensors") + ": header length"));

  testing::spit(dir.file("model.safetensors"), "");
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.path()); }), HasSubstr(dir.path() + ": holds both"));
  fs::remove(index);
  fs::remove(dir.file("model.safetensors"));
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.path()); }), HasSubstr(dir.path() + ": holds neither"));
  EXPECT_THAT(error_message([&] { SafetensorsDir::open(dir.file("nope")); }), HasSubstr("nope: not a directory"));

  write_safetensors(dir.file("model.safetensors"), {{"a", arange_f32({4})}});
  SafetensorsDir single = SafetensorsDir::open(dir.path());
  EXPECT_EQ(error_message([&] { single.read("b"); }),
            "ValueError: " + dir.path() + ": no tensor 'b' among the checkpoint's 1 tensors; close names: 'a'");
}

// --- writing ---

std::vector<std::string> temporaries_in(const TempDir& dir) {
  std::vector<std::string> out;
  for (const std::string& name : dir.listing()) {
    if (name.find(".tmp.") != std::string::npos) out.push_back(name);
  }
  return out;
}

TEST(Safetensors, WritesAtomically) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const Tensor ones = Tensor::from_vector(std::vector<double>(1000, 1.0), {1000});
  const Tensor twos = Tensor::from_vector(std::vector<double>(1000, 2.0), {1000});
  write_safetensors(path, {{"w", ones}});

  // A reader that opens the file while it is rewritten over and over sees one version or the
  // other, whole, every time.
  std::atomic<bool> done = false;
  std::thread writer([&] {
    for (int i = 0; i < 40; ++i) write_safetensors(path, {{"w", i % 2 ? ones : twos}});
    done = true;
  });
  int reads = 0;
  while (!done || reads == 0) {
    SafetensorsFile file = SafetensorsFile::open(path);
    const std::vector<double> values = values_of(file.read("w"));
    ASSERT_TRUE(values == values_of(ones) || values == values_of(twos));
    ++reads;
  }
  writer.join();
  EXPECT_EQ(values_of(SafetensorsFile::open(path).read("w")), values_of(ones));
  EXPECT_EQ(temporaries_in(dir), std::vector<std::string>{});

  // A write that fails after its temporary exists (the rename onto a directory) removes it.
  fs::create_directories(dir.file("taken/inner"));
  EXPECT_THAT(error_message([&] {
                write_safetensors(dir.file("taken"), {{"w", ones}});
              }),
              HasSubstr(dir.file("taken") + ": cannot rename '" + dir.file("taken") + ".tmp."));
  EXPECT_EQ(temporaries_in(dir), std::vector<std::string>{});
  EXPECT_EQ(values_of(SafetensorsFile::open(path).read("w")), values_of(ones));
}

TEST(Safetensors, WriteErrorsNameThePathAndTensor) {
  TempDir dir;
  const std::string missing_dir = dir.file("no/such/dir/model.safetensors");
  EXPECT_THAT(error_message([&] {
                write_safetensors(missing_dir, {{"w", arange_f32({2})}});
              }),
              HasSubstr(missing_dir + ": cannot create the temporary file '" + missing_dir + ".tmp."));
  EXPECT_THAT(error_message([&] {
                write_safetensors(missing_dir, {{"w", arange_f32({2})}});
              }),
              HasSubstr("No such file or directory"));

  const std::string path = dir.file("m.safetensors");
  EXPECT_EQ(error_message([&] {
              write_safetensors(path, {{"w", arange_f32({2})}, {"w", arange_f32({3})}});
            }),
            "ValueError: " + path + ": tensor 'w' is given twice");
  EXPECT_EQ(error_message([&] {
              write_safetensors(path, {{"__metadata__", arange_f32({2})}});
            }),
            "ValueError: " + path + ": '__metadata__' is reserved and cannot name a tensor");
  EXPECT_EQ(error_message([&] {
              write_safetensors(path, {{"w", Tensor::meta({2})}});
            }),
            "ValueError: " + path + ": tensor 'w': has no values to write (a meta, traced or subclass tensor)");
  EXPECT_THAT(error_message([&] {
                write_safetensors(path, {{"w\xff", arange_f32({2})}});
              }),
              HasSubstr(path + ": a tensor name or metadata string is not valid UTF-8"));
  EXPECT_THAT(error_message([&] { write_sharded_safetensors(dir.path(), {}, 0); }),
              HasSubstr(dir.path() + ": max_shard_bytes is 0; it must be positive"));
  EXPECT_EQ(dir.listing(), std::vector<std::string>{});
}

TEST(Safetensors, FileHandleMovesAndStaysOpen) {
  TempDir dir;
  write_safetensors(dir.file("m.safetensors"), {{"w", arange_f32({3})}});
  SafetensorsFile first = SafetensorsFile::open(dir.file("m.safetensors"));
  fs::remove(dir.file("m.safetensors"));  // the open descriptor still reads the file
  SafetensorsFile second = std::move(first);
  EXPECT_EQ(values_of(second.read("w")), (std::vector<double>{0, 1, 2}));
  std::vector<SafetensorsFile> files;
  files.push_back(std::move(second));
  EXPECT_EQ(files.front().bytes_read(), 12);
}

}  // namespace
}  // namespace px::io

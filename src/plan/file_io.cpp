#include "plan/file_io.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "parallax/core/error.h"

namespace px::plan {
namespace {

std::string errno_text() { return errno != 0 ? std::strerror(errno) : "unknown error"; }

std::string read_gzip(const std::string& path) {
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw ValueError("cannot open '" + path + "': " + errno_text());
  gzbuffer(file, 1 << 18);
  std::string text;
  std::string chunk(1 << 20, '\0');
  for (;;) {
    const int got = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int code = 0;
      const std::string reason = gzerror(file, &code);
      gzclose(file);
      throw ValueError("cannot read '" + path + "' (gzip): " + reason);
    }
    if (got == 0) break;
    text.append(chunk.data(), static_cast<size_t>(got));
  }
  gzclose(file);
  return text;
}

}  // namespace

bool has_gzip_suffix(const std::string& path) { return path.size() >= 3 && path.ends_with(".gz"); }

std::string read_text_file(const std::string& path) {
  if (has_gzip_suffix(path)) return read_gzip(path);
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError("cannot open '" + path + "': " + errno_text());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ValueError("cannot read '" + path + "'");
  return std::move(text).str();
}

void write_text_file(const std::string& path, const std::string& text) {
  errno = 0;
  if (has_gzip_suffix(path)) {
    gzFile file = gzopen(path.c_str(), "wb");
    if (file == nullptr) throw ValueError("cannot open '" + path + "' for writing: " + errno_text());
    size_t done = 0;
    while (done < text.size()) {
      const auto part = static_cast<unsigned>(std::min<size_t>(text.size() - done, 1u << 30));
      if (gzwrite(file, text.data() + done, part) != static_cast<int>(part)) {
        gzclose(file);
        throw ValueError("cannot write '" + path + "' (gzip)");
      }
      done += part;
    }
    if (gzclose(file) != Z_OK) throw ValueError("cannot write '" + path + "' (gzip)");
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ValueError("cannot open '" + path + "' for writing: " + errno_text());
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw ValueError("cannot write '" + path + "'");
}

}  // namespace px::plan

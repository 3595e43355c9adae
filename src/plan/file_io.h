#pragma once
// Whole-file text I/O for problem and solution files; a path ending in ".gz" is read and written
// gzip-compressed. ValueError naming the path and the reason when a file cannot be read or written.

#include <string>

namespace px::plan {

bool has_gzip_suffix(const std::string& path);
std::string read_text_file(const std::string& path);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace px::plan

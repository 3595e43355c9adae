#pragma once
// Mesh options shared by the commands: "--mesh 8x8" (or "2,2,2") and "--mesh-dims dp,tp".

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace px::cli {

// "8x8" or "2,4" -> {8, 8}. ValueError naming the text.
std::vector<int64_t> parse_mesh(const std::string& text);
// Comma-separated names, one per dim; empty text: "dp" (1-D), "dp,tp" (2-D), "d0,d1,..." beyond.
std::vector<std::string> mesh_dim_names(const std::string& text, size_t count);
// A CLI11 check that the text parses as a mesh (a bad --mesh is a usage error).
CLI::Validator mesh_validator();

}  // namespace px::cli

// libFuzzer target: model configs, both Parallax's own (nn::model_from_json) and Hugging Face
// config.json files (nn::model_from_hf_config), from the same bytes.

#include "fuzz_input.h"
#include "parallax/nn/zoo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  px::fuzz::check_parser(data, size, [](const std::string& text) { px::nn::model_from_json(text, "model.json"); });
  return px::fuzz::check_parser(data, size,
                                [](const std::string& text) { px::nn::model_from_hf_config(text, "config.json"); });
}

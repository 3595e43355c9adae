// libFuzzer target: device profiles as JSON (plan::device_profile_from_json).

#include "fuzz_input.h"
#include "parallax/plan/device_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return px::fuzz::check_parser(data, size,
                                [](const std::string& text) { px::plan::device_profile_from_json(text, "fuzz.json"); });
}

#include "support/op_samples.h"
#include "support/test_util.h"

namespace px::testing {

// Factories have no inputs and no VJP.
std::vector<OpSample> factory_samples() {
  return {
      {"full", {}, {{"shape", Shape{2, 3}}, {"value", 1.5}}, false, "f32 default"},
      {"full", {}, {{"shape", Shape{4}}, {"value", -2.0}, {"dtype", DType::Int64}}, false, "i64"},
      {"arange", {}, {{"end", 5.0}}, false, "i64 default"},
      {"arange", {}, {{"start", 1.0}, {"end", 2.0}, {"step", 0.25}, {"dtype", DType::Float64}}, false, "f64"},
      {"uniform", {}, {{"shape", Shape{3, 4}}, {"low", -1.0}, {"high", 2.0}, {"seed", int64_t{7}}}, false, ""},
      {"normal",
       {},
       {{"shape", Shape{2, 5}},
        {"mean", 1.0},
        {"std", 0.5},
        {"seed", int64_t{7}},
        {"offset", int64_t{12}},
        {"dtype", DType::Float64}},
       false,
       ""},
  };
}

}  // namespace px::testing

// libFuzzer target: plans as JSON (plan::plan_from_json). The seeds are plans of the zoo's MLP
// (global batch 8) on meshes [dp=2] and [dp=2, tp=2], made by `parallax plan --model mlp --batch 8
// --ac none --out ...`; each input is read against both problems, so that mutations of a seed get
// past the fingerprint check into the placements.

#include <vector>

#include "fuzz_input.h"
#include "parallax/autodiff/training_step.h"
#include "parallax/nn/zoo.h"
#include "parallax/plan/builder.h"
#include "parallax/plan/plan.h"

namespace {

struct Problems {
  px::JointProgram program;
  std::vector<px::plan::PlanProblem> plans;
};

// Built once for the whole run: the fuzz loop reads plans against it and never changes it.
const Problems& problems() {
  static const Problems built = [] {
    Problems out{px::training_step_joint(px::nn::zoo_model("mlp"), 8, 1), {}};
    out.plans.push_back(px::plan::build_problem(out.program, px::dist::DeviceMesh({2}, {"dp"})));
    out.plans.push_back(px::plan::build_problem(out.program, px::dist::DeviceMesh({2, 2}, {"dp", "tp"})));
    return out;
  }();
  return built;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Problems& built = problems();
  for (const px::plan::PlanProblem& plan : built.plans) {
    px::fuzz::check_parser(data, size,
                           [&](const std::string& text) { px::plan::plan_from_json(built.program, plan, text); });
  }
  return 0;
}

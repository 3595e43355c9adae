// AutoParallel in a few lines: four ranks (threads of this process; under mpirun, one process
// each) plan GPT-mini on a 2x2 mesh, then train it on their shards.
#include <iostream>

#include "parallax/parallax.h"

int main() {
  const px::dist::DeviceMesh mesh({2, 2}, {"dp", "tp"});
  px::Generator gen(0);  // the same batch on every rank: each keeps its block
  px::Tensor tokens = px::uniform({8, 16}, 0, 64, gen).to(px::DType::Int64);  // token ids in [0, 64)
  px::Tensor targets = px::uniform({8, 16}, 0, 64, gen).to(px::DType::Int64);

  px::dist::launch(4, [&](int rank, px::dist::ProcessGroup& world) {
    auto groups = std::make_shared<px::dist::MeshGroups>(mesh, world);
    px::nn::LmLoss<px::nn::GPT> model(px::nn::gpt_mini());  // meta tensors: nothing allocated
    px::AutoParallel ap(
        model, [&] { return std::make_tuple(tokens, targets); }, mesh);
    ap.add_parameter_memory_constraint(0, 0.5);                    // each parameter at most half on a rank
    px::plan::ShardingPlan plan = ap.optimize_placement(*groups);  // rank 0 solves, all receive
    px::ParallelModule module = ap.apply_placement(plan, groups);  // local shards only
    for (int step = 0; step < 5; ++step) {
      module.train_step(tokens, targets);
      if (rank == 0) std::cout << "step " << step << " loss " << module.last_loss() << "\n";
    }
    if (rank == 0) {
      std::cout << "wte.weight " << px::placements_str(module.placements("model.wte.weight")) << ", local "
                << px::shape_str(module.local_tensor("model.wte.weight").shape()) << "\n";
    }
  });
}

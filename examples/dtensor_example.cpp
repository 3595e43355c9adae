// DTensor in a few lines: four ranks (threads of this process; under mpirun, one process
// each) share a 2x2 mesh, shard a matmul's operands, and read the result back.
#include <iostream>

#include "parallax/parallax.h"

int main() {
  px::dist::launch(4, [](int rank, px::dist::ProcessGroup& world) {
    auto mesh = std::make_shared<px::dist::MeshGroups>(px::dist::DeviceMesh({2, 2}, {"dp", "tp"}), world);
    px::Generator gen(0);  // the same seed on every rank: every rank builds the same global tensors
    px::Tensor x = px::randn({8, 4}, gen);
    px::Tensor w = px::randn({4, 6}, gen);

    // Rows of x split over dp, columns of w over tp: the matmul needs no communication.
    px::Tensor xs = px::distribute_tensor(x, mesh, {px::Shard{0}, px::Replicate{}});
    px::Tensor ws = px::distribute_tensor(w, mesh, {px::Replicate{}, px::Shard{1}});
    px::Tensor y = px::matmul(xs, ws);  // [S(0), S(1)]: each rank holds a 4x3 block
    px::Tensor total = px::sum(y);      // [P(sum), P(sum)]: partial sums until someone reduces them

    px::Tensor full = px::full_tensor(y);  // all_gather over both mesh dims
    double reduced = px::full_tensor(total).item<float>();
    if (rank == 0) {
      std::cout << "y: " << px::placements_str(px::dtensor_spec(y).placements) << ", local "
                << px::shape_str(px::to_local(y).shape()) << " of " << px::shape_str(y.shape()) << "\n"
                << "sum(y): " << px::placements_str(px::dtensor_spec(total).placements) << " = " << reduced
                << " (single device: " << px::sum(px::matmul(x, w)).item<float>() << ")\n"
                << "max |full - single device| = " << px::amax(px::abs(px::sub(full, px::matmul(x, w)))).item<float>()
                << "\n";
    }
  });
}

// The foundations demo: a small MLP traced into an IR graph, differentiated
// into a joint forward+backward graph, cleaned by CSE and DCE, and trained
// with SGD on one device through the IR interpreter. Prints the loss falling.
//
//   build/examples/demo_mlp [--steps N] [--lr X] [--seed S] [--dump-graph FILE]

#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>

#include "parallax/parallax.h"

namespace {

struct Config {
  int64_t steps = 300;
  double lr = 0.5;
  uint64_t seed = 0;
  int64_t batch = 256, in = 8, hidden = 32, classes = 4;
  std::string dump_graph;
};

// loss = cross_entropy(linear(gelu(linear(x, w1, b1)), w2, b2), y)
px::ir::Graph trace_mlp_loss(const Config& cfg) {
  using px::DType;
  px::ir::Tracer tracer("mlp");
  px::Tensor w1 = tracer.add_input("fc1.weight", {{cfg.hidden, cfg.in}, DType::Float32});
  px::Tensor b1 = tracer.add_input("fc1.bias", {{cfg.hidden}, DType::Float32});
  px::Tensor w2 = tracer.add_input("fc2.weight", {{cfg.classes, cfg.hidden}, DType::Float32});
  px::Tensor b2 = tracer.add_input("fc2.bias", {{cfg.classes}, DType::Float32});
  px::Tensor x = tracer.add_input("x", {{cfg.batch, cfg.in}, DType::Float32});
  px::Tensor y = tracer.add_input("y", {{cfg.batch}, DType::Int64});
  px::InterceptScope scope(tracer);
  px::Tensor h;
  {
    px::ir::ProvenanceScope fc1("fc1");
    h = px::gelu(px::linear(x, w1, b1));
  }
  px::ir::ProvenanceScope fc2("fc2");
  tracer.set_outputs({px::cross_entropy(px::linear(h, w2, b2), y)});
  return tracer.finish();
}

int64_t count_phase(const px::ir::Graph& graph, px::ir::Phase phase) {
  int64_t count = 0;
  for (const px::ir::Node& node : graph.nodes()) count += node.provenance.phase == phase;
  return count;
}

int run(const Config& cfg) {
  px::Generator gen(cfg.seed);
  // A teacher network labels random points; the student learns to match it.
  px::Tensor x = px::randn({cfg.batch, cfg.in}, gen);
  px::Tensor teacher = px::randn({cfg.classes, cfg.in}, gen);
  px::Tensor y = px::argmax(px::matmul(x, teacher.transpose(0, 1)), 1);

  double scale1 = 1.0 / std::sqrt(static_cast<double>(cfg.in));
  double scale2 = 1.0 / std::sqrt(static_cast<double>(cfg.hidden));
  std::vector<px::Tensor> params = {
      px::uniform({cfg.hidden, cfg.in}, -scale1, scale1, gen), px::zeros({cfg.hidden}),
      px::uniform({cfg.classes, cfg.hidden}, -scale2, scale2, gen), px::zeros({cfg.classes})};

  px::ir::Graph forward = trace_mlp_loss(cfg);
  std::vector<bool> requires_grad = {true, true, true, true, false, false};
  px::autodiff::JointGraph joint = px::autodiff::build_joint(forward, {.requires_grad = requires_grad});
  int64_t traced_nodes = static_cast<int64_t>(joint.graph.nodes().size());
  px::ir::PassManager passes;
  passes.add<px::ir::CommonSubexpressionElimination>().add<px::ir::DeadCodeElimination>();
  passes.run(joint.graph);
  std::cout << "joint graph: " << count_phase(joint.graph, px::ir::Phase::Forward) << " forward + "
            << count_phase(joint.graph, px::ir::Phase::Backward) << " backward nodes (" << traced_nodes
            << " before CSE/DCE)\n";
  if (!cfg.dump_graph.empty()) {
    std::ofstream(cfg.dump_graph) << joint.graph.str();
    std::cout << "wrote the joint graph's IR text to " << cfg.dump_graph << "\n";
  }

  px::Tensor seed = px::Tensor::scalar(1.0);  // d loss / d loss
  auto start = std::chrono::steady_clock::now();
  double first_loss = 0, loss = 0;
  for (int64_t step = 0; step <= cfg.steps; ++step) {
    std::vector<px::Tensor> inputs = params;
    inputs.insert(inputs.end(), {x, y, seed});
    std::vector<px::Tensor> results = px::ir::interpret(joint.graph, inputs);
    loss = results[0].item<double>();
    if (step == 0) first_loss = loss;
    if (step % (cfg.steps / 10 > 0 ? cfg.steps / 10 : 1) == 0) {
      std::cout << "step " << std::setw(4) << step << "  loss " << std::fixed << std::setprecision(4) << loss << "\n";
    }
    if (step == cfg.steps) break;
    for (size_t i = 0; i < params.size(); ++i) params[i] = params[i] - cfg.lr * results[1 + i];
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  px::Tensor logits = px::linear(px::gelu(px::linear(x, params[0], params[1])), params[2], params[3]);
  double accuracy = px::mean(px::eq(px::argmax(logits, 1), y).to(px::DType::Float32)).item<double>();
  std::cout << "loss " << first_loss << " -> " << loss << " in " << cfg.steps << " steps (" << std::setprecision(2)
            << seconds << " s); training accuracy " << std::setprecision(1) << 100 * accuracy << "%\n";
  if (!(loss < first_loss)) {
    std::cerr << "the loss did not fall\n";
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"Parallax foundations demo: train a small MLP through the IR interpreter"};
  app.add_option("--steps", cfg.steps, "SGD steps")->check(CLI::PositiveNumber);
  app.add_option("--lr", cfg.lr, "learning rate")->check(CLI::PositiveNumber);
  app.add_option("--seed", cfg.seed, "seed of the data and the initialization");
  app.add_option("--dump-graph", cfg.dump_graph, "write the joint graph's IR text to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(cfg);
  } catch (const px::Error& error) {
    std::cerr << error.what() << "\n";
    return 2;
  }
}

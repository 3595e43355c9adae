// The single-device demo: an nn::Module (an MLP classifier with its loss) is
// materialized, captured into a graph, differentiated into a joint
// forward+backward graph with descriptors, cleaned by CSE and DCE, and trained
// with SGD through the IR interpreter. Prints the loss falling.
//
//   build/examples/demo_mlp [--steps N] [--lr X] [--seed S] [--dump-graph FILE]

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "parallax/parallax.h"

namespace {

struct Config {
  int64_t steps = 300;
  double lr = 0.5;
  uint64_t seed = 0;
  int64_t batch = 256, in = 8, hidden = 32, classes = 4;
  std::string dump_graph;
};

// loss = cross_entropy(mlp(x), y), as a module so that capture sees its parameters.
class Classifier : public px::nn::ModuleBase<Classifier> {
 public:
  Classifier(int64_t in, int64_t hidden, int64_t classes) {
    mlp_ = register_module("mlp", std::make_shared<px::nn::MLPModel>(in, hidden, classes));
  }
  px::Tensor forward(const px::Tensor& x, const px::Tensor& y) { return px::cross_entropy((*mlp_)(x), y); }
  px::nn::MLPModel& mlp() { return *mlp_; }

 private:
  std::shared_ptr<px::nn::MLPModel> mlp_;
};

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

  Classifier model(cfg.in, cfg.hidden, cfg.classes);
  model.materialize(cfg.seed);  // each parameter drawn from Philox keyed by (seed, its name)

  px::CaptureOptions options;
  options.name = "mlp";
  options.input_names = {"x", "y"};
  px::CapturedProgram program = px::capture(model, std::make_tuple(x, y), options);
  px::JointProgram joint = px::export_joint(program);
  int64_t traced_nodes = static_cast<int64_t>(joint.graph.nodes().size());
  px::ir::PassManager passes;
  passes.add<px::ir::CommonSubexpressionElimination>().add<px::ir::DeadCodeElimination>();
  passes.run(joint.graph);
  std::cout << "joint graph: " << count_phase(joint.graph, px::ir::Phase::Forward) << " forward + "
            << count_phase(joint.graph, px::ir::Phase::Backward) << " backward nodes (" << traced_nodes
            << " before CSE/DCE)\n  inputs: ";
  for (const px::InputDescriptor& input : joint.inputs) std::cout << input << " ";
  std::cout << "\n  outputs: ";
  for (const px::OutputDescriptor& output : joint.outputs) std::cout << output << " ";
  std::cout << "\n";
  if (!cfg.dump_graph.empty()) {
    std::ofstream(cfg.dump_graph) << joint.graph.str();
    std::cout << "wrote the joint graph's IR text to " << cfg.dump_graph << "\n";
  }

  // Each parameter's slot in the module and the graph output holding its gradient.
  std::vector<std::pair<px::Tensor*, int64_t>> updates;
  for (const px::InputDescriptor& input : joint.inputs) {
    if (input.kind != px::InputDescriptor::Kind::Param) continue;
    updates.emplace_back(&model.slot(input.fqns[0]), joint.grad_output_of(input));
  }

  px::Tensor seed = px::Tensor::scalar(1.0);  // d loss / d loss
  auto start = std::chrono::steady_clock::now();
  double first_loss = 0, loss = 0;
  for (int64_t step = 0; step <= cfg.steps; ++step) {
    std::vector<px::Tensor> inputs;
    for (const auto& [slot, grad] : updates) inputs.push_back(*slot);
    inputs.insert(inputs.end(), {x, y, seed});
    std::vector<px::Tensor> results = px::ir::interpret(joint.graph, inputs);
    loss = results[0].item<double>();
    if (step == 0) first_loss = loss;
    if (step % (cfg.steps / 10 > 0 ? cfg.steps / 10 : 1) == 0) {
      std::cout << "step " << std::setw(4) << step << "  loss " << std::fixed << std::setprecision(4) << loss << "\n";
    }
    if (step == cfg.steps) break;
    for (const auto& [slot, grad] : updates) *slot = *slot - cfg.lr * results[grad];
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  px::Tensor logits = model.mlp()(x);  // eager, on the trained parameters
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
  CLI::App app{"Parallax demo: capture a small MLP, build its joint graph, train it through the IR interpreter"};
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

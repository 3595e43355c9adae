// The fast solver: message passing for the pairwise costs, Lagrangian prices for the memory limit,
// and tree-block moves to make and keep solutions feasible.
//
// Why this works on the contest graphs (and the planner's own):
//  - Without the memory limit the problem is a pairwise cost function on a sparse graph (about 1.5
//    edges per node: chains of operators, closed into cycles by residual connections and shared
//    inputs). Most strategy pairs of an edge are prohibitively expensive (1e18 in the contest
//    files: incompatible shardings), so moves that change a few nodes while the rest stays put get
//    stuck far from the optimum (50x on the contest's G instance). TRW-S message passing
//    (trws.h) propagates the cost of each choice along the whole graph, cycles included, and its
//    decoded solutions, finished by tree-block descent (tree_blocks.h: exact re-optimization of
//    thousands of nodes forming a tree), reach the unconstrained optimum on G (proven by the ILP)
//    within 150 passes, where descent alone stops 85x above it.
//  - The memory limit couples nodes only through the summed usage at each time step. Pricing it
//    with a multiplier lambda_t >= 0 per step turns it into a per-strategy cost,
//    usage(s) * (sum of lambda_t over the node's interval), computed for every node from prefix
//    sums of lambda; the priced problem is again an unconstrained one, and its messages are warm
//    from the previous prices. Subgradient steps (Polyak's rule against the best feasible cost)
//    raise prices where memory overflows and lower them where it is idle, so the priced solutions
//    drift to ones that just fit.
//  - Each priced solution is made feasible by repair moves (at the worst step, the tree block
//    around one of the nodes live there that frees memory at the least cost per byte, no node of
//    the block using more than before) and improved by descent that keeps every step within its
//    limit: single-node moves, then tree blocks whose nodes may only grow by their own slack,
//    undone if the block as a whole overflows. The best feasible solution over all rounds is the
//    answer (the least infeasible one when none fits).
// Schedule: message passing on the plain costs until decoded solutions stop improving (at most a
// sixth of the time when the limit binds), then rounds of 30 passes at the current prices, block
// descent, repair and feasible descent, and a price update. A stall (50 rounds, or twice the rounds
// the best took, bringing nothing better; or prices with nothing left to adjust) ends the search
// when the caller asks for that (FastOptions::stop_after_stall); otherwise the search restarts:
// the prices are scaled by random factors and the costs the messages see get relative noise (a
// level cycling through kRestartNoise), which moves the decoded solutions to other basins while
// the repair and descent still work on the true costs, and it goes on until the deadline.
// A lower bound runs beside the search (dual_bound.h: MPLP edge updates with the forbidden marks
// as +infinity, two passes per decode and per round (ten while the search stalls), on the plain
// costs first and then on the priced ones less the prices times the capacities); a best feasible
// cost that meets it is proven optimal and ends every search.
// Several searches with different seeds can run side by side (FastOptions::threads), the best
// of them being the answer. On the contest instances this matches or beats the contest's best
// entries within their time limits (docs/benchmarks.md).
// Deterministic for a seed and a thread count: every random choice of a search comes from its own
// std::mt19937_64, searches share nothing, and the amount of work is fixed unless the time limit
// cuts it short.

#include "plan/fast_solver.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <iterator>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "plan/dual_bound.h"
#include "plan/partition_crossover.h"
#include "plan/tree_blocks.h"
#include "plan/trws.h"

namespace px::plan {
namespace {

constexpr BlockLimits kRepairBlock{32, 64};  // a repair move's block
constexpr size_t kRepairCandidates = 4;      // blocks tried per repair move
constexpr BlockLimits kPolishBlock{64, 64};  // a feasible descent block
constexpr int kTrwsPerRound = 30;            // message passes per price update (3 or 10 miss G's optimum)
constexpr int kDecodeEvery = 10;             // message passes between decodes, unconstrained
constexpr int kBoundPasses = 2;              // the bound's own message passes per decode or round
// ... and per round while the search stalls (10 rounds without a better solution): the time
// then buys the bound more than it buys the search (MPLP climbs slowly on the big instances).
constexpr int kStalledBoundPasses = 10;
constexpr int64_t kBoundStallRounds = 10;

// The schedule's tuning (the header comment above says how the phases fit together).
// Unconstrained phase: its share of the time when the limit binds (the priced rounds matter
// more then), and the block-descent sweeps that finish each decoded solution (descent stops
// earlier by itself once a sweep gains nothing; 20 only bounds it).
constexpr double kUnconstrainedShare = 1.0 / 6;
constexpr int kFinishSweeps = 20;
// Message passing stops when 60 passes (or half of all passes so far, if more) decoded nothing
// better: the decoded cost plateaus long before the messages converge.
constexpr int64_t kPassStall = 60;
// A repair gets at most a tenth of the time left: a solution far over the limit can take many
// moves, and the next prices may do better sooner.
constexpr double kRepairShare = 0.1;
// Priced rounds: block-descent sweeps on the priced costs per round (cheap and approximate: the
// prices move every round anyway).
constexpr int kPricedSweeps = 5;
// consider(): block descent is the expensive part, so it polishes only candidates within 2% of
// the best feasible cost, in at most 8 rounds of block pass plus descent (each stops early when
// it gains nothing).
constexpr double kPolishWithin = 1.02;
constexpr int kPolishRounds = 8;
// Subgradient steps (Polyak's rule): the step factor theta starts at 1 and halves after 10 rounds
// without a better dual bound, the usual schedule, never below 1e-3 so that prices keep moving.
constexpr double kThetaStart = 1.0;
constexpr int kDualStallRounds = 10;
constexpr double kThetaDecay = 0.5;
constexpr double kThetaFloor = 1e-3;
// Without a usable target (no feasible solution yet, or one still paying forbidden terms), aim
// half again above the larger of the dual and the unconstrained cost, so that prices keep rising
// until something fits.
constexpr double kBlindTargetFactor = 1.5;
// The gap a step uses is at least this share of the target (plus an absolute 1e-9): a target
// reached exactly would otherwise stop the prices dead.
constexpr double kMinRelativeGap = 1e-4;
constexpr double kMinAbsoluteGap = 1e-9;
// Stall: stop after 50 rounds without a better solution, or twice the rounds the best took if
// that is more (a slow start earns a longer wait), unless the user's time limit comes first.
constexpr int64_t kStallRounds = 50;
constexpr int64_t kStallPerBestRound = 2;
// Restarts: each scales every price by a factor drawn from [1 - kPriceShake, 1 + kPriceShake] and
// perturbs the costs the messages see by relative noise of the next level here (the levels go
// from a nudge that keeps most of the solution to a shake that changes its basin).
constexpr double kPriceShake = 0.5;
constexpr double kRestartNoise[] = {0.01, 0.03, 0.1};
// Crossover: a part whose gain is within this share of the best cost is rounding, not a gain.
constexpr double kCrossoverGainTolerance = 1e-12;
double crossover_least_gain(double best_cost) { return kCrossoverGainTolerance * std::max(1.0, std::fabs(best_cost)); }

std::vector<double> usage_excess(const Model& model, const std::vector<int32_t>& x) {
  std::vector<double> delta(model.num_steps() + 1, 0.0);
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    if (model.lo[k] == model.hi[k]) continue;
    const double u = model.node_usages(k)[x[k]];
    delta[model.lo[k]] += u;
    delta[model.hi[k]] -= u;
  }
  std::vector<double> excess(model.num_steps());
  double usage = 0;
  for (int32_t j = 0; j < model.num_steps(); ++j) {
    usage += delta[j];
    excess[j] = usage - model.capacity[j];
  }
  return excess;
}

class FastSolver {
 public:
  // `stop`: set by whichever search proves its best optimal; every search sharing it stops then.
  FastSolver(const Model& model, const FastOptions& options, std::atomic<bool>& stop)
      : model_(model),
        options_(options),
        stop_(stop),
        rng_(options.seed),
        trws_(model),
        bound_(model),
        blocks_(model),
        state_(model) {}

  FastOutcome run();

 private:
  bool out_of_time() const { return stop_.load(std::memory_order_relaxed) || Clock::now() >= options_.deadline; }
  // Keeps `bound` if it beats the best so far; true (and every search stops) once the best
  // feasible cost is proven optimal.
  bool note_bound(double bound);
  bool proven() const { return best_feasible_ && meets_bound(best_cost_, best_bound_); }
  void block_descent(const std::vector<double>& unary, int max_sweeps, std::vector<int32_t>& x);
  // Message passing on the model's own costs until the decoded solutions stop improving.
  std::vector<int32_t> unconstrained();
  // Repairs and improves x, keeps it if it is the best so far, and crosses it with the best.
  void consider(const std::vector<int32_t>& x);
  bool repair();
  // Block passes and descent on the (feasible) state until they gain nothing.
  void polish();
  double feasible_block_pass(BlockLimits limits);
  // Keeps the state if it is the best so far; then the best takes every part of the state, or of
  // the best it replaced, that is cheaper and fits (partition_crossover.h).
  void record_and_cross();
  void record();
  void cross_into_best(const std::vector<int32_t>& other);
  FastOutcome outcome(int64_t rounds) const;
  // The costs the messages see after a restart: `unary` with relative noise of noise_.
  void add_noise(std::vector<double>& unary);

  // A point `fraction` of the way from now to the deadline.
  Clock::time_point budget(double fraction) const {
    const Clock::time_point now = Clock::now();
    if (now >= options_.deadline) return now;
    return now + std::chrono::duration_cast<Clock::duration>(fraction * (options_.deadline - now));
  }

  const Model& model_;
  const FastOptions& options_;
  std::atomic<bool>& stop_;
  std::mt19937_64 rng_;
  Trws trws_;
  DualBound bound_;
  TreeBlockSolver blocks_;
  SearchState state_;
  std::vector<int32_t> best_x_;
  double best_cost_ = kInfinity;
  bool best_feasible_ = false;
  double best_excess_ = kInfinity;
  double best_bound_ = -kInfinity;
  std::vector<double> caps_;
  int64_t restarts_ = 0;
  int64_t crossovers_ = 0;  // crossovers that switched a part into the best
  double noise_ = 0;
};

bool FastSolver::note_bound(double bound) {
  if (std::isfinite(bound) && bound > best_bound_) {
    best_bound_ = bound;
    if (options_.on_bound) options_.on_bound(bound);
  }
  if (!proven()) return false;
  stop_.store(true, std::memory_order_relaxed);
  return true;
}

void FastSolver::add_noise(std::vector<double>& unary) {
  if (noise_ <= 0) return;
  std::uniform_real_distribution<double> factor(1 - noise_, 1 + noise_);
  for (double& cost : unary) {
    if (!is_forbidden_cost(cost)) cost *= factor(rng_);
  }
}

void FastSolver::block_descent(const std::vector<double>& unary, int max_sweeps, std::vector<int32_t>& x) {
  for (int sweep = 0; sweep < max_sweeps && !out_of_time(); ++sweep) {
    if (blocks_.sweep(unary, nullptr, BlockLimits{}, x, rng_, options_.deadline) == 0) break;
  }
}

std::vector<int32_t> FastSolver::unconstrained() {
  const Clock::time_point until = model_.has_limit ? budget(kUnconstrainedShare) : options_.deadline;
  std::vector<int32_t> x(model_.num_nodes(), 0);
  std::vector<int32_t> best;
  double best_cost = kInfinity;
  int64_t last_improvement = 0;
  for (int64_t pass = 1; Clock::now() < until; ++pass) {
    trws_.iterate(model_.cost, x, options_.deadline);
    if (pass % kDecodeEvery != 0) continue;
    std::vector<int32_t> candidate = x;
    block_descent(model_.cost, kFinishSweeps, candidate);
    const double cost = model_cost(model_, candidate);
    if (cost < best_cost) {
      best_cost = cost;
      best = std::move(candidate);
      last_improvement = pass;
    }
    // The unconstrained problem's bound bounds the constrained one too; once the decoded best
    // meets it, nothing better is left to decode.
    note_bound(bound_.improve(model_.cost, kBoundPasses));
    if (meets_bound(best_cost, best_bound_)) break;
    if (pass - last_improvement >= std::max(kPassStall, pass / 2)) break;
  }
  if (best.empty()) {
    block_descent(model_.cost, kFinishSweeps, x);
    best = x;
  }
  return best;
}

bool FastSolver::repair() {
  const Clock::time_point until = budget(kRepairShare);
  const int32_t n = model_.num_nodes();
  std::vector<int32_t> x = state_.x();
  caps_.resize(n);
  for (int32_t k = 0; k < n; ++k) caps_[k] = model_.node_usages(k)[x[k]];
  std::vector<int32_t> live;
  std::vector<double> costs;
  std::vector<std::pair<double, int32_t>> candidates;
  std::vector<std::pair<int32_t, int32_t>> best_move, move;
  while (!state_.feasible()) {
    if (Clock::now() >= until) return false;
    const int32_t step = state_.excess().argmax_all();
    const double excess = state_.max_excess();
    state_.nodes_at(step, live);
    // Rank nodes by their best single move's cost per byte, then try blocks around the best few.
    candidates.clear();
    for (int32_t node : live) {
      const double* usage = model_.node_usages(node);
      const int32_t current = x[node];
      bool any_lower = false;
      for (int32_t s = 0; s < model_.num_strategies(node) && !any_lower; ++s) any_lower = usage[s] < usage[current];
      if (!any_lower) continue;
      state_.local_costs(node, nullptr, costs);
      double score = kInfinity;
      for (int32_t s = 0; s < model_.num_strategies(node); ++s) {
        if (usage[s] >= usage[current]) continue;
        score = std::min(score, (costs[s] - costs[current]) / std::min(usage[current] - usage[s], excess));
      }
      candidates.emplace_back(score, node);
    }
    if (candidates.empty()) return false;  // every node live there already uses its least memory
    const size_t tries = std::min(kRepairCandidates, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(tries), candidates.end());
    double best_ratio = kInfinity;
    best_move.clear();
    for (size_t c = 0; c < tries; ++c) {
      const int32_t root = candidates[c].second;
      const double* usage = model_.node_usages(root);
      double below = -kInfinity;  // the root must use less than now
      for (int32_t s = 0; s < model_.num_strategies(root); ++s) {
        if (usage[s] < usage[x[root]]) below = std::max(below, usage[s]);
      }
      const double saved_cap = caps_[root];
      caps_[root] = below;
      const double delta = blocks_.solve_block(root, model_.cost, caps_.data(), kRepairBlock, x);
      caps_[root] = saved_cap;
      const std::vector<int32_t>& block = blocks_.block();
      const std::vector<int32_t>& previous = blocks_.previous();
      double freed = 0;
      move.clear();
      for (size_t p = 0; p < block.size(); ++p) {
        const int32_t node = block[p];
        if (x[node] == previous[p]) continue;
        move.emplace_back(node, x[node]);
        if (model_.lo[node] <= step && step < model_.hi[node]) {
          freed += model_.node_usages(node)[previous[p]] - model_.node_usages(node)[x[node]];
        }
        x[node] = previous[p];
      }
      if (freed <= 0) continue;
      const double ratio = delta / std::min(freed, excess);
      if (ratio < best_ratio) {
        best_ratio = ratio;
        best_move = move;
      }
    }
    if (best_move.empty()) return false;
    for (const auto& [node, strategy] : best_move) {
      state_.set(node, strategy);
      x[node] = strategy;
      caps_[node] = model_.node_usages(node)[strategy];
    }
  }
  return true;
}

double FastSolver::feasible_block_pass(BlockLimits limits) {
  const int32_t n = model_.num_nodes();
  caps_.resize(n);
  for (int32_t k = 0; k < n; ++k) caps_[k] = model_.node_usages(k)[state_.x()[k]] + state_.slack(k);
  std::vector<int32_t> x = state_.x();
  std::vector<int32_t> roots(n);
  std::iota(roots.begin(), roots.end(), 0);
  std::shuffle(roots.begin(), roots.end(), rng_);
  // Every node in some block once per pass (blocks overlap: a node may be in several).
  std::vector<uint8_t> covered(n, 0);
  const double start = state_.cost();
  for (int32_t i = 0; i < n; ++i) {
    if (covered[roots[i]]) continue;
    if ((i & 63) == 0 && out_of_time()) break;
    const double change = blocks_.solve_block(roots[i], model_.cost, caps_.data(), limits, x);
    const std::vector<int32_t>& block = blocks_.block();
    const std::vector<int32_t>& previous = blocks_.previous();
    for (int32_t node : block) covered[node] = 1;
    if (change >= 0) {
      for (size_t p = 0; p < block.size(); ++p) x[block[p]] = previous[p];
      continue;
    }
    const double before = state_.cost();
    for (int32_t node : block) state_.set(node, x[node]);
    if (state_.feasible() && state_.cost() < before) {
      for (int32_t node : block) caps_[node] = model_.node_usages(node)[x[node]] + state_.slack(node);
      continue;
    }
    for (size_t p = 0; p < block.size(); ++p) {
      state_.set(block[p], previous[p]);
      x[block[p]] = previous[p];
    }
  }
  return start - state_.cost();
}

void FastSolver::record() {
  const bool feasible = state_.feasible();
  const double excess = state_.max_excess();
  // Exact cost: the incremental one drifts when prohibitive (1e18) terms come and go.
  const double cost = model_cost(model_, state_.x());
  const bool better =
      feasible ? (!best_feasible_ || cost < best_cost_)
               : (!best_feasible_ && (excess < best_excess_ || (excess == best_excess_ && cost < best_cost_)));
  if (!better) return;
  best_x_ = state_.x();
  best_cost_ = cost;
  best_feasible_ = feasible;
  best_excess_ = excess;
  if (feasible && options_.on_improvement) options_.on_improvement(cost);
}

void FastSolver::consider(const std::vector<int32_t>& x) {
  state_.assign(x);
  if (!state_.feasible() && !repair()) {
    record_and_cross();
    return;
  }
  state_.descend(options_.deadline, rng_);
  // Block descent is the expensive part: only for candidates close to the best.
  if (!best_feasible_ || state_.cost() <= kPolishWithin * best_cost_) polish();
  record_and_cross();
}

void FastSolver::polish() {
  for (int round = 0; round < kPolishRounds && !out_of_time(); ++round) {
    double gain = feasible_block_pass(kPolishBlock);
    if (gain <= 0) break;
    gain += state_.descend(options_.deadline, rng_);
  }
}

void FastSolver::record_and_cross() {
  std::vector<int32_t> candidate = state_.x();
  std::vector<int32_t> previous = best_x_;
  const bool had_feasible = best_feasible_;
  record();
  if (!best_feasible_) return;
  if (best_x_ != candidate) {
    cross_into_best(candidate);
  } else if (had_feasible) {
    cross_into_best(previous);
  }
}

void FastSolver::cross_into_best(const std::vector<int32_t>& other) {
  state_.assign(best_x_);
  if (cross_into(model_, state_, other, crossover_least_gain(best_cost_)) == 0) return;
  ++crossovers_;
  state_.descend(options_.deadline, rng_);
  polish();
  record();
}

FastOutcome FastSolver::outcome(int64_t rounds) const {
  FastOutcome out;
  out.x = best_x_;
  out.feasible = best_feasible_;
  out.cost = best_cost_;
  out.max_excess = best_excess_;
  out.rounds = rounds;
  out.restarts = restarts_;
  out.crossovers = crossovers_;
  out.lower_bound = best_feasible_ ? std::min(best_bound_, best_cost_) : best_bound_;
  out.optimal = proven();
  return out;
}

FastOutcome FastSolver::run() {
  const int32_t n = model_.num_nodes();
  std::vector<int32_t> x = unconstrained();
  const double unconstrained_cost = model_cost(model_, x);
  consider(x);
  if (n == 0 || note_bound(-kInfinity)) return outcome(0);
  bool binds = model_.has_limit && model_.num_steps() > 0;
  if (binds) {
    const std::vector<double> excess = usage_excess(model_, x);
    binds = *std::max_element(excess.begin(), excess.end()) > 0;
  }
  // The unconstrained optimum of the messages fits: with a stall limit that is the answer; an
  // anytime search goes on to look for better ones from perturbed costs.
  if (!binds && options_.stop_after_stall > 0) return outcome(0);

  const int32_t steps = model_.num_steps();
  const int64_t stall_rounds = options_.stop_after_stall > 0 ? options_.stop_after_stall : kStallRounds;
  std::vector<double> lambda(steps, 0.0);
  std::vector<double> prefix(steps + 1, 0.0);
  std::vector<double> priced(model_.cost.size());
  std::vector<double> unary;
  double theta = kThetaStart;
  double best_dual = -kInfinity;
  int64_t since_dual = 0;
  int64_t since_best = 0;
  int64_t last_best_round = 0;
  int64_t period_start = 0;  // the round the current search period (the start, or a restart) began after
  double last_best = best_cost_;
  bool last_feasible = best_feasible_;
  int64_t round = 0;
  while (!out_of_time()) {
    ++round;
    for (int32_t j = 0; j < steps; ++j) prefix[j + 1] = prefix[j] + lambda[j];
    for (int32_t k = 0; k < n; ++k) {
      const double weight = prefix[model_.hi[k]] - prefix[model_.lo[k]];
      const int64_t offset = model_.strategy_offset[k];
      for (int32_t s = 0; s < model_.num_strategies(k); ++s) {
        priced[offset + s] = model_.cost[offset + s] + weight * model_.usage[offset + s];
      }
    }
    unary = priced;
    add_noise(unary);
    for (int pass = 0; pass < kTrwsPerRound && !out_of_time(); ++pass) trws_.iterate(unary, x, options_.deadline);
    block_descent(unary, kPricedSweeps, x);
    const std::vector<double> excess = usage_excess(model_, x);
    long double price = 0;
    for (int32_t k = 0; k < n; ++k) {
      price += (prefix[model_.hi[k]] - prefix[model_.lo[k]]) * model_.node_usages(k)[x[k]];
    }
    long double capacity_price = 0;
    double norm = 0;
    for (int32_t j = 0; j < steps; ++j) {
      if (lambda[j] > 0) capacity_price += static_cast<long double>(lambda[j]) * model_.capacity[j];  // 0 * inf
      if (excess[j] > 0 || lambda[j] > 0) norm += excess[j] * excess[j];
    }
    const double dual = model_cost(model_, x) + static_cast<double>(price - capacity_price);
    // Weak duality: a feasible solution's cost is at least its priced cost less the prices times
    // the capacities, so the priced problem's bound less them bounds the constrained optimum.
    const int bound_passes = since_best >= kBoundStallRounds ? kStalledBoundPasses : kBoundPasses;
    const double bound = bound_.improve(priced, bound_passes) - static_cast<double>(capacity_price);
    consider(x);
    if (note_bound(bound)) break;
    if (best_cost_ < last_best || best_feasible_ != last_feasible) {
      last_best = best_cost_;
      last_feasible = best_feasible_;
      last_best_round = round;
      since_best = 0;
    } else {
      ++since_best;
    }
    if (dual > best_dual) {
      best_dual = dual;
      since_dual = 0;
    } else if (++since_dual >= kDualStallRounds) {
      theta = std::max(theta * kThetaDecay, kThetaFloor);
      since_dual = 0;
    }
    // Stalled: nothing better for a while, or nothing for the prices to adjust (feasible, and every
    // priced step exactly full; always so when the limit does not bind).
    const bool stalled =
        norm == 0 || since_best > std::max(stall_rounds, kStallPerBestRound * (last_best_round - period_start));
    if (stalled) {
      if (options_.stop_after_stall > 0) break;
      std::uniform_real_distribution<double> shake(1 - kPriceShake, 1 + kPriceShake);
      for (double& price_j : lambda) price_j *= shake(rng_);
      noise_ = kRestartNoise[restarts_ % std::size(kRestartNoise)];
      ++restarts_;
      theta = kThetaStart;
      since_best = 0;
      since_dual = 0;
      period_start = last_best_round = round;
      continue;
    }
    // Polyak's target: the best feasible cost, unless it still pays prohibitive (1e18) terms, whose
    // size says nothing about how far the prices are from right; then half again above the
    // current estimate, so that prices keep rising until something fits.
    const double target = best_feasible_ && !is_forbidden_cost(best_cost_)
                              ? best_cost_
                              : kBlindTargetFactor * std::max(std::fabs(dual), std::fabs(unconstrained_cost)) + 1;
    const double gap = std::max(target - dual, kMinRelativeGap * std::fabs(target) + kMinAbsoluteGap);
    const double step = theta * gap / norm;
    for (int32_t j = 0; j < steps; ++j) lambda[j] = std::max(0.0, lambda[j] + step * excess[j]);
  }
  return outcome(round);
}

// Thread i's seed: the caller's for i = 0 (one thread is the plain search), well spread otherwise.
uint64_t search_seed(uint64_t seed, int i) { return seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull; }

// Feasible before infeasible, then the lower cost (the smaller excess among infeasible ones), then
// the lower thread index: the same answer whatever order the threads finish in.
bool better_outcome(const FastOutcome& a, const FastOutcome& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (!a.feasible && a.max_excess != b.max_excess) return a.max_excess < b.max_excess;
  return a.cost < b.cost;
}

}  // namespace

FastOutcome solve_fast_model(const Model& model, const FastOptions& options) {
  std::atomic<bool> stop{false};
  if (options.threads <= 1) return FastSolver(model, options, stop).run();
  std::mutex report_mutex;
  double reported = kInfinity;
  double reported_bound = -kInfinity;
  FastOptions shared = options;
  shared.threads = 1;
  shared.on_improvement = [&](double cost) {
    const std::lock_guard<std::mutex> lock(report_mutex);
    if (cost >= reported) return;
    reported = cost;
    if (options.on_improvement) options.on_improvement(cost);
  };
  shared.on_bound = [&](double bound) {
    const std::lock_guard<std::mutex> lock(report_mutex);
    if (bound <= reported_bound) return;
    reported_bound = bound;
    if (options.on_bound) options.on_bound(bound);
  };
  const int threads = options.threads;
  std::vector<FastOptions> each(threads, shared);
  std::vector<FastOutcome> outcomes(threads);
  std::vector<std::exception_ptr> errors(threads);
  auto search = [&](int i) {
    try {
      each[i].seed = search_seed(options.seed, i);
      outcomes[i] = FastSolver(model, each[i], stop).run();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) workers.emplace_back(search, i);
  search(0);
  for (std::thread& worker : workers) worker.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  size_t best = 0;
  double bound = -kInfinity;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (better_outcome(outcomes[i], outcomes[best])) best = i;
    bound = std::max(bound, outcomes[i].lower_bound);  // each search's bound holds for all
  }
  FastOutcome answer = std::move(outcomes[best]);
  // The searches' answers differ in parts; the best takes the others' cheaper parts that fit, in
  // thread order (so the same answers give the same result), without polishing: the time is up.
  if (answer.feasible) {
    SearchState state(model);
    state.assign(answer.x);
    int64_t kept = 0;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (i != best && !outcomes[i].x.empty())
        kept += cross_into(model, state, outcomes[i].x, crossover_least_gain(answer.cost));
    }
    const double crossed_cost = model_cost(model, state.x());
    if (kept > 0 && state.feasible() && crossed_cost < answer.cost) {
      answer.x = state.x();
      answer.cost = crossed_cost;
      answer.crossovers += kept;
    }
  }
  answer.lower_bound = answer.feasible ? std::min(bound, answer.cost) : bound;
  answer.optimal = answer.feasible && meets_bound(answer.cost, bound);
  return answer;
}

}  // namespace px::plan

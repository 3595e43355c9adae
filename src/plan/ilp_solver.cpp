// The exact solver: the AutoParallel/Alpa integer program, solved by COIN-OR CBC through its
// library API (Cbc_C_Interface: CBC's full solve, with its presolve, cuts and heuristics).
//
//   x[k][s] binary     node k takes strategy s;             sum_s x[k][s] = 1
//   y[e][a][b] in [0,1] edge e = (u, v) takes the pair (a, b): sum_b y[e][a][b] = x[u][a] and
//                       sum_a y[e][a][b] = x[v][b] (the marginal form, tighter than
//                       y >= x[u][a] + x[v][b] - 1; with x integral it forces y = x[u][a] * x[v][b],
//                       so y need not be integer)
//   memory             at every step, sum over live nodes of (usage - the node's least usage) * x
//                       <= capacity - sum of least usages; one row per distinct set of live nodes
//                       whose usage depends on the choice, redundant rows dropped
//   minimize           sum of node costs * x + edge costs * y
//
// Kept small before CBC sees it: nodes with one strategy are constants (the model), edges whose
// matrix is a sum of a row and a column term fold into the node costs, and with a feasible
// incumbent of cost C every strategy or strategy pair whose cost exceeds its own minimum by more
// than C - (sum of all minima) is left out: no solution using it can beat C. On the contest files
// that removes the prohibitive (1e18) entries, which would otherwise wreck CBC's numerics.
//
// solve_ilp_model runs in named stages below: fold, prune, cap the objective, columns (with the
// size check), assignment and edge rows, memory rows, solve, decode.

#include "plan/ilp_solver.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

namespace px::plan {
namespace {

bool is_additive(const double* matrix, int32_t rows, int32_t columns) {
  for (int32_t a = 1; a < rows; ++a) {
    for (int32_t b = 1; b < columns; ++b) {
      const double lhs = matrix[int64_t{a} * columns + b] + matrix[0];
      const double rhs = matrix[int64_t{a} * columns] + matrix[b];
      if (lhs != rhs || !std::isfinite(lhs) || std::fabs(lhs) >= 9e15) return false;
    }
  }
  return true;
}

// CBC does not stop at its time limit inside its presolve and root LP (the C API offers no way
// to interrupt them), which take minutes on big models: the contest's A instance (millions of
// columns, even pruned), and LLaMA-3-8B's unclustered problem on 8 devices (~378k columns), still
// in CoinUtils after 600 s under a 400 s limit. Models beyond this many columns per second of
// time limit, or beyond the cap at any limit, are not handed to it. Measured below the cap:
// IOPDDL G (~150k columns unpruned) solves in ~3-10 s, GPT-2's unclustered problem on 8 devices
// (~119k) in ~9 s, both proven optimal.
constexpr double kColumnsPerSecond = 5000;
constexpr int64_t kMaxColumns = 200'000;

// Dense memory rows up to this many nonzeros, the running-sum form beyond (see below).
constexpr int64_t kDenseMemoryNonzeros = 4'000'000;

struct Triplets {
  std::vector<int32_t> row, column;
  std::vector<double> value;
  void add(int32_t r, int32_t c, double v) {
    row.push_back(r);
    column.push_back(c);
    value.push_back(v);
  }
};

// CBC 2.10 as Debian builds it (without CBC_THREAD_SAFE) keeps process-wide statics in the
// argument parsing behind Cbc_solve: two threads solving at once garble each other's parameters,
// and CBC falls back to prompting on stdin (coin-or/Cbc#332; OR-Tools builds CBC thread-safe for
// this reason). The library is process-global state, so its guard is too: one CBC solve at a
// time per process. A solve that cannot get it before its deadline reports no solution.
std::timed_mutex& cbc_mutex() {
  static std::timed_mutex mutex;
  return mutex;
}

struct CbcDeleter {
  void operator()(Cbc_Model* model) const { Cbc_deleteModel(model); }
};

}  // namespace

int64_t ilp_column_budget(double seconds) {
  return static_cast<int64_t>(std::min<double>(kMaxColumns, kColumnsPerSecond * std::max(seconds, 1.0)));
}

namespace {

// Stage 1, fold: edges whose matrix is a row term plus a column term become node costs; the rest
// stay coupled and get y columns.
struct Folded {
  std::vector<double> unary;     // per model strategy: its cost, folded edge terms included
  std::vector<int32_t> coupled;  // model edges that stay pairwise
  double constant = 0;
};

Folded fold_additive_edges(const Model& model) {
  Folded folded{model.cost, {}, model.constant_cost};
  for (int32_t e = 0; e < static_cast<int32_t>(model.edges.size()); ++e) {
    const ModelEdge& edge = model.edges[e];
    const int32_t rows = model.num_strategies(edge.u);
    const int32_t columns = model.num_strategies(edge.v);
    const double* matrix = model.matrix(edge);
    if (!is_additive(matrix, rows, columns)) {
      folded.coupled.push_back(e);
      continue;
    }
    for (int32_t a = 0; a < rows; ++a) {
      folded.unary[model.strategy_offset[edge.u] + a] += matrix[int64_t{a} * columns];
    }
    for (int32_t b = 0; b < columns; ++b) folded.unary[model.strategy_offset[edge.v] + b] += matrix[b] - matrix[0];
  }
  return folded;
}

// Stage 2, prune: with an incumbent of cost C, a strategy or pair whose cost exceeds its own
// minimum by more than C - (sum of all minima) cannot be in a better solution. The incumbent's own
// strategies and pairs are always kept (they are CBC's start). One predicate per kind of column,
// used both to count the model and to build it.
class Pruning {
 public:
  Pruning(const Model& model, const Folded& folded, const IlpOptions& options)
      : model_(model), folded_(folded), incumbent_(options.incumbent) {
    const int32_t n = model.num_nodes();
    node_min_.resize(n);
    long double lower = folded.constant;
    for (int32_t k = 0; k < n; ++k) {
      const double* c = folded.unary.data() + model.strategy_offset[k];
      node_min_[k] = *std::min_element(c, c + model.num_strategies(k));
      lower += node_min_[k];
    }
    edge_min_.resize(folded.coupled.size());
    for (size_t i = 0; i < folded.coupled.size(); ++i) {
      const ModelEdge& edge = model.edges[folded.coupled[i]];
      const double* matrix = model.matrix(edge);
      edge_min_[i] =
          *std::min_element(matrix, matrix + int64_t{model.num_strategies(edge.u)} * model.num_strategies(edge.v));
      lower += edge_min_[i];
    }
    if (incumbent_ != nullptr) {
      // A little above the exact slack, so that rounding never prunes the incumbent's equals.
      slack_ = options.incumbent_cost - static_cast<double>(lower);
      slack_ += 1e-9 * std::fabs(options.incumbent_cost) + 1e-9;
    }
  }

  bool keep_strategy(int32_t k, int32_t s) const {
    return folded_.unary[model_.strategy_offset[k] + s] - node_min_[k] <= slack_ ||
           (incumbent_ != nullptr && (*incumbent_)[k] == s);
  }
  // Pair (p, q) of the i-th coupled edge; both its strategies must be kept too.
  bool keep_pair(size_t i, int32_t p, int32_t q) const {
    const ModelEdge& edge = model_.edges[folded_.coupled[i]];
    const double value = model_.matrix(edge)[int64_t{p} * model_.num_strategies(edge.v) + q];
    return value - edge_min_[i] <= slack_ ||
           (incumbent_ != nullptr && (*incumbent_)[edge.u] == p && (*incumbent_)[edge.v] == q);
  }

 private:
  const Model& model_;
  const Folded& folded_;
  const std::vector<int32_t>* incumbent_;
  std::vector<double> node_min_;
  std::vector<double> edge_min_;
  double slack_ = kInfinity;
};

// Stage 3, objective: forbidden costs are capped at more than any solution without them can cost.
// The preference is the same (fewest forbidden terms, then the least cost), the numbers stay in a
// range CBC can work with, and the bound stays a lower bound (costs only went down). With a clean
// incumbent they are pruned anyway.
double forbidden_cap(const Model& model, const Folded& folded) {
  long double clean_span = 1;
  auto add_most_clean = [&](const double* values, int64_t count) {
    double most = 0;
    for (int64_t t = 0; t < count; ++t) {
      if (!is_forbidden_cost(values[t])) most = std::max(most, std::fabs(values[t]));
    }
    clean_span += most;
  };
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    add_most_clean(folded.unary.data() + model.strategy_offset[k], model.num_strategies(k));
  }
  for (int32_t e : folded.coupled) {
    const ModelEdge& edge = model.edges[e];
    add_most_clean(model.matrix(edge), int64_t{model.num_strategies(edge.u)} * model.num_strategies(edge.v));
  }
  return static_cast<double>(2 * clean_span);
}

// The integer program as CBC loads it: columns (x, then y, then any running-sum columns) and rows
// as triplets.
struct Program {
  std::vector<int32_t> x_column;  // per model strategy; -1 when pruned
  std::vector<double> objective;
  std::vector<double> column_upper;
  std::vector<uint8_t> is_integer;
  Triplets a;
  std::vector<double> row_lower, row_upper;
  int32_t rows = 0;

  int32_t add_column(double cost, bool integer, double upper) {
    objective.push_back(cost);
    is_integer.push_back(integer ? 1 : 0);
    column_upper.push_back(upper);
    return static_cast<int32_t>(objective.size() - 1);
  }
  int32_t add_row(double lower, double upper) {
    row_lower.push_back(lower);
    row_upper.push_back(upper);
    return rows++;
  }
};

// Stage 4, columns: x per kept strategy.
void add_strategy_columns(const Model& model, const Folded& folded, const Pruning& pruning, double cap,
                          Program& program) {
  program.x_column.assign(model.cost.size(), -1);
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    const int64_t offset = model.strategy_offset[k];
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      if (!pruning.keep_strategy(k, s)) continue;
      const double cost = folded.unary[offset + s];
      program.x_column[offset + s] = program.add_column(is_forbidden_cost(cost) ? std::min(cost, cap) : cost, true, 1);
    }
  }
}

// The columns the program will have: x columns plus the y columns of kept pairs of kept strategies.
int64_t count_columns(const Model& model, const Folded& folded, const Pruning& pruning, const Program& program) {
  auto columns = static_cast<int64_t>(program.objective.size());
  for (size_t i = 0; i < folded.coupled.size(); ++i) {
    const ModelEdge& edge = model.edges[folded.coupled[i]];
    for (int32_t p = 0; p < model.num_strategies(edge.u); ++p) {
      if (program.x_column[model.strategy_offset[edge.u] + p] < 0) continue;
      for (int32_t q = 0; q < model.num_strategies(edge.v); ++q) {
        columns += program.x_column[model.strategy_offset[edge.v] + q] >= 0 && pruning.keep_pair(i, p, q);
      }
    }
  }
  return columns;
}

// Stage 5, rows: one strategy per node, and each coupled edge's marginal rows with its y columns.
void add_assignment_and_edges(const Model& model, const Folded& folded, const Pruning& pruning, double cap,
                              Program& program) {
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    const int32_t row = program.add_row(1.0, 1.0);
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      if (const int32_t c = program.x_column[model.strategy_offset[k] + s]; c >= 0) program.a.add(row, c, 1.0);
    }
  }
  for (size_t i = 0; i < folded.coupled.size(); ++i) {
    const ModelEdge& edge = model.edges[folded.coupled[i]];
    const int32_t rows = model.num_strategies(edge.u);
    const int32_t columns = model.num_strategies(edge.v);
    const double* matrix = model.matrix(edge);
    // One marginal row per strategy of u, then one per strategy of v.
    const int32_t u_rows = program.rows;
    const int32_t v_rows = program.rows + rows;
    for (int32_t r = 0; r < rows + columns; ++r) program.add_row(0.0, 0.0);
    for (int32_t p = 0; p < rows; ++p) {
      if (const int32_t xu = program.x_column[model.strategy_offset[edge.u] + p]; xu >= 0) {
        program.a.add(u_rows + p, xu, -1.0);
      }
    }
    for (int32_t q = 0; q < columns; ++q) {
      if (const int32_t xv = program.x_column[model.strategy_offset[edge.v] + q]; xv >= 0) {
        program.a.add(v_rows + q, xv, -1.0);
      }
    }
    for (int32_t p = 0; p < rows; ++p) {
      if (program.x_column[model.strategy_offset[edge.u] + p] < 0) continue;
      for (int32_t q = 0; q < columns; ++q) {
        if (program.x_column[model.strategy_offset[edge.v] + q] < 0 || !pruning.keep_pair(i, p, q)) continue;
        const double value = matrix[int64_t{p} * columns + q];
        const int32_t column = program.add_column(is_forbidden_cost(value) ? std::min(value, cap) : value, false, 1);
        program.a.add(u_rows + p, column, 1.0);
        program.a.add(v_rows + q, column, 1.0);
      }
    }
  }
}

// Stage 6, memory: one constraint per run of steps with the same live nodes whose usage depends on
// the choice (a group), on the usage above each node's least. Either as dense rows (sum over the
// live nodes <= rhs: what CBC handles best) or, when those would be too many nonzeros (tens of
// thousands of nodes live at once on the contest's big instances), as a running sum: one
// continuous P_g per group, P_g = P_{g-1} + (usage of nodes starting) - (usage of nodes ending),
// P_g <= rhs_g, which has the same LP relaxation in linear size. False when even the least usage
// of every node overflows some step (the model is infeasible).
bool add_memory_rows(const Model& model, Program& program) {
  const int32_t n = model.num_nodes();
  const int32_t steps = model.num_steps();
  std::vector<double> usage_min(n, 0.0), usage_range(n, 0.0);
  std::vector<int64_t> node_nonzeros(n, 0);
  std::vector<std::vector<int32_t>> starting(steps + 1), ending(steps + 1);
  std::vector<long double> base_delta(steps + 1, 0);
  for (int32_t k = 0; k < n; ++k) {
    if (model.lo[k] == model.hi[k]) continue;
    const double* u = model.node_usages(k);
    usage_min[k] = kInfinity;
    double usage_max = -kInfinity;
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      usage_min[k] = std::min(usage_min[k], u[s]);
      if (program.x_column[model.strategy_offset[k] + s] >= 0) usage_max = std::max(usage_max, u[s]);
    }
    usage_range[k] = usage_max - usage_min[k];
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      node_nonzeros[k] += program.x_column[model.strategy_offset[k] + s] >= 0 && u[s] > usage_min[k] ? 1 : 0;
    }
    base_delta[model.lo[k]] += usage_min[k];
    base_delta[model.hi[k]] -= usage_min[k];
    if (usage_range[k] > 0) {
      starting[model.lo[k]].push_back(k);
      ending[model.hi[k]].push_back(k);
    }
  }
  // Groups: the first step of each, its least rhs, and whether it can be violated at all.
  struct Group {
    int32_t first = 0;
    double rhs = kInfinity;
    long double most = 0;  // the largest usage above the least of the nodes live then
    int64_t nonzeros = 0;  // as a dense row
  };
  std::vector<Group> groups;
  long double base = 0;
  long double most = 0;
  int64_t live_nonzeros = 0;
  for (int32_t j = 0; j < steps; ++j) {
    if (!starting[j].empty() || !ending[j].empty()) {
      for (int32_t k : ending[j]) most -= usage_range[k], live_nonzeros -= node_nonzeros[k];
      for (int32_t k : starting[j]) most += usage_range[k], live_nonzeros += node_nonzeros[k];
      groups.push_back({j, kInfinity, most, live_nonzeros});
    }
    base += base_delta[j];
    const double rhs = static_cast<double>(model.capacity[j] - base);
    if (rhs < 0) return false;
    if (!groups.empty()) groups.back().rhs = std::min(groups.back().rhs, rhs);
  }
  int64_t dense_nonzeros = 0;
  for (const Group& g : groups) dense_nonzeros += g.most > g.rhs ? g.nonzeros : 0;
  const auto add_usage = [&](int32_t r, int32_t k, double sign) {
    const double* u = model.node_usages(k);
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      const int32_t c = program.x_column[model.strategy_offset[k] + s];
      if (c >= 0 && u[s] > usage_min[k]) program.a.add(r, c, sign * (u[s] - usage_min[k]));
    }
  };
  if (dense_nonzeros <= kDenseMemoryNonzeros) {
    std::vector<int32_t> live;  // sorted: a deterministic column order within each row
    for (const Group& g : groups) {
      for (int32_t k : ending[g.first]) live.erase(std::lower_bound(live.begin(), live.end(), k));
      for (int32_t k : starting[g.first]) live.insert(std::upper_bound(live.begin(), live.end(), k), k);
      if (g.most <= g.rhs) continue;  // cannot be violated
      const int32_t row = program.add_row(-DBL_MAX, g.rhs);
      for (int32_t k : live) add_usage(row, k, 1.0);
    }
  } else {
    int32_t previous = -1;  // the running sum's column of the previous group
    for (const Group& g : groups) {
      const int32_t column = program.add_column(0.0, false, g.most > g.rhs ? g.rhs : DBL_MAX);
      const int32_t row = program.add_row(0.0, 0.0);
      program.a.add(row, column, 1.0);
      if (previous >= 0) program.a.add(row, previous, -1.0);
      for (int32_t k : starting[g.first]) add_usage(row, k, -1.0);
      for (int32_t k : ending[g.first]) add_usage(row, k, 1.0);
      previous = column;
    }
  }
  return true;
}

// Stage 7, solve: the program in compressed sparse columns, handed to CBC with the time left and
// the incumbent as its start. The caller holds cbc_mutex() until the model is deleted.
std::unique_ptr<Cbc_Model, CbcDeleter> solve_with_cbc(const Model& model, const Program& program,
                                                      const IlpOptions& options) {
  const auto num_columns = static_cast<int32_t>(program.objective.size());
  std::vector<CoinBigIndex> start(num_columns + 1, 0);
  for (int32_t c : program.a.column) ++start[c + 1];
  for (int32_t c = 0; c < num_columns; ++c) start[c + 1] += start[c];
  std::vector<int32_t> index(program.a.row.size());
  std::vector<double> value(program.a.row.size());
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  for (size_t t = 0; t < program.a.row.size(); ++t) {
    const CoinBigIndex at = fill[program.a.column[t]]++;
    index[at] = program.a.row[t];
    value[at] = program.a.value[t];
  }
  const std::vector<double> column_lower(num_columns, 0.0);
  std::unique_ptr<Cbc_Model, CbcDeleter> cbc(Cbc_newModel());
  Cbc_loadProblem(cbc.get(), num_columns, program.rows, start.data(), index.data(), value.data(), column_lower.data(),
                  program.column_upper.data(), program.objective.data(), program.row_lower.data(),
                  program.row_upper.data());
  for (int32_t c = 0; c < num_columns; ++c) {
    if (program.is_integer[c]) Cbc_setInteger(cbc.get(), c);
  }
  const double remaining = std::chrono::duration<double>(options.deadline - Clock::now()).count();
  Cbc_setParameter(cbc.get(), "timeMode", "elapsed");
  Cbc_setMaximumSeconds(cbc.get(), std::max(remaining, 0.01));
  Cbc_setLogLevel(cbc.get(), 0);
  if (options.incumbent != nullptr) {
    std::vector<int32_t> start_columns;
    std::vector<double> start_values;
    for (int32_t k = 0; k < model.num_nodes(); ++k) {
      start_columns.push_back(program.x_column[model.strategy_offset[k] + (*options.incumbent)[k]]);
      start_values.push_back(1.0);
    }
    Cbc_setMIPStartI(cbc.get(), static_cast<int>(start_columns.size()), start_columns.data(), start_values.data());
  }
  Cbc_solve(cbc.get());
  return cbc;
}

// Stage 8, decode: each node's strategy from CBC's best solution, the cost, the status and bound.
void decode(const Model& model, const Program& program, double constant, Cbc_Model* cbc, IlpOutcome& outcome) {
  if (Cbc_isProvenInfeasible(cbc) && Cbc_bestSolution(cbc) == nullptr) {
    outcome.status = IlpStatus::Infeasible;
    return;
  }
  const double* solution = Cbc_bestSolution(cbc);
  if (solution == nullptr) return;
  outcome.x.assign(model.num_nodes(), 0);
  for (int32_t k = 0; k < model.num_nodes(); ++k) {
    double best = -1;
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      const int32_t c = program.x_column[model.strategy_offset[k] + s];
      if (c >= 0 && solution[c] > best) {
        best = solution[c];
        outcome.x[k] = s;
      }
    }
  }
  outcome.cost = model_cost(model, outcome.x);
  // With forbidden terms in the answer, CBC proved optimality for the capped costs only.
  outcome.status =
      Cbc_isProvenOptimal(cbc) && !is_forbidden_cost(outcome.cost) ? IlpStatus::Optimal : IlpStatus::Feasible;
  // With pruning, CBC bounds the optimum over solutions cheaper than the incumbent; the optimum
  // is at least the smaller of that and the cost found (which is at most the incumbent's).
  const double bound = Cbc_getBestPossibleObjValue(cbc) + constant;
  if (outcome.status == IlpStatus::Optimal) {
    outcome.bound = outcome.cost;
  } else if (std::isfinite(bound) && std::fabs(bound) < 1e300) {
    outcome.bound = std::min(bound, outcome.cost);
  }
}

}  // namespace

IlpOutcome solve_ilp_model(const Model& model, const IlpOptions& options) {
  IlpOutcome outcome;
  if (model.num_nodes() == 0) {
    outcome.status = IlpStatus::Optimal;
    outcome.cost = model.constant_cost;
    outcome.bound = outcome.cost;
    return outcome;
  }
  const Folded folded = fold_additive_edges(model);
  const Pruning pruning(model, folded, options);
  const double cap = forbidden_cap(model, folded);
  Program program;
  add_strategy_columns(model, folded, pruning, cap, program);
  // The size check, before anything big is built.
  const int64_t columns = count_columns(model, folded, pruning, program);
  const double seconds = std::chrono::duration<double>(options.deadline - Clock::now()).count();
  if (columns > ilp_column_budget(seconds)) {
    outcome.status = IlpStatus::TooLarge;
    outcome.columns = columns;
    return outcome;
  }
  add_assignment_and_edges(model, folded, pruning, cap, program);
  if (model.has_limit && !add_memory_rows(model, program)) {
    outcome.status = IlpStatus::Infeasible;  // even the least usage of every node overflows a step
    return outcome;
  }
  // Declared before the model, so that the model is deleted while CBC is still held.
  // The wait is given as a system_clock deadline: for a steady_clock one, libstdc++ calls
  // pthread_mutex_clocklock, which g++ 12's ThreadSanitizer does not intercept (it then reports
  // every unlock as an unlock of an unlocked mutex).
  std::unique_lock<std::timed_mutex> cbc_lock(cbc_mutex(), std::defer_lock);
  const auto wait = std::chrono::duration_cast<std::chrono::system_clock::duration>(options.deadline - Clock::now());
  if (!cbc_lock.try_lock_until(std::chrono::system_clock::now() + wait)) return outcome;
  const auto cbc = solve_with_cbc(model, program, options);
  outcome.columns = static_cast<int64_t>(program.objective.size());
  outcome.rows = program.rows;
  decode(model, program, folded.constant, cbc.get(), outcome);
  return outcome;
}

}  // namespace px::plan

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

#include "plan/ilp_solver.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

namespace px::plan {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

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

IlpOutcome solve_ilp_model(const Model& model, const IlpOptions& options) {
  IlpOutcome outcome;
  const int32_t n = model.num_nodes();
  if (n == 0) {
    outcome.status = IlpStatus::Optimal;
    outcome.cost = model.constant_cost;
    outcome.bound = outcome.cost;
    return outcome;
  }

  // Fold additive edges into node costs.
  std::vector<double> unary = model.cost;
  double constant = model.constant_cost;
  std::vector<int32_t> coupled;
  for (int32_t e = 0; e < static_cast<int32_t>(model.edges.size()); ++e) {
    const ModelEdge& edge = model.edges[e];
    const int32_t rows = model.num_strategies(edge.u);
    const int32_t columns = model.num_strategies(edge.v);
    const double* matrix = model.matrix(edge);
    if (!is_additive(matrix, rows, columns)) {
      coupled.push_back(e);
      continue;
    }
    for (int32_t a = 0; a < rows; ++a) unary[model.strategy_offset[edge.u] + a] += matrix[int64_t{a} * columns];
    for (int32_t b = 0; b < columns; ++b) unary[model.strategy_offset[edge.v] + b] += matrix[b] - matrix[0];
  }

  // Pruning against the incumbent.
  std::vector<double> node_min(n);
  long double lower = constant;
  for (int32_t k = 0; k < n; ++k) {
    const double* c = unary.data() + model.strategy_offset[k];
    node_min[k] = *std::min_element(c, c + model.num_strategies(k));
    lower += node_min[k];
  }
  std::vector<double> edge_min(coupled.size());
  for (size_t i = 0; i < coupled.size(); ++i) {
    const ModelEdge& edge = model.edges[coupled[i]];
    const double* matrix = model.matrix(edge);
    edge_min[i] =
        *std::min_element(matrix, matrix + int64_t{model.num_strategies(edge.u)} * model.num_strategies(edge.v));
    lower += edge_min[i];
  }
  double slack = kInfinity;
  if (options.incumbent != nullptr) {
    slack = options.incumbent_cost - static_cast<double>(lower);
    slack += 1e-9 * std::fabs(options.incumbent_cost) + 1e-9;
  }

  // Prohibitive costs in CBC's objective are capped at more than any solution without them can
  // cost: the preference is the same (fewest prohibitive terms, then the least cost), the numbers
  // stay in a range CBC can work with, and the bound stays a lower bound (costs only went down).
  // With a clean incumbent they are pruned anyway.
  long double clean_span = 1;
  for (int32_t k = 0; k < n; ++k) {
    double most = 0;
    const double* c = unary.data() + model.strategy_offset[k];
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      if (!is_forbidden_cost(c[s])) most = std::max(most, std::fabs(c[s]));
    }
    clean_span += most;
  }
  for (int32_t e : coupled) {
    const ModelEdge& edge = model.edges[e];
    const double* matrix = model.matrix(edge);
    double most = 0;
    for (int64_t t = 0; t < int64_t{model.num_strategies(edge.u)} * model.num_strategies(edge.v); ++t) {
      if (!is_forbidden_cost(matrix[t])) most = std::max(most, std::fabs(matrix[t]));
    }
    clean_span += most;
  }
  const double cap = static_cast<double>(2 * clean_span);
  const auto objective_of = [cap](double value) { return is_forbidden_cost(value) ? std::min(value, cap) : value; };

  // Columns: x, then y.
  std::vector<int32_t> x_column(model.cost.size(), -1);
  std::vector<double> objective;
  std::vector<double> column_upper;
  std::vector<uint8_t> is_integer;
  for (int32_t k = 0; k < n; ++k) {
    const int64_t offset = model.strategy_offset[k];
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      const bool keep =
          unary[offset + s] - node_min[k] <= slack || (options.incumbent != nullptr && (*options.incumbent)[k] == s);
      if (!keep) continue;
      x_column[offset + s] = static_cast<int32_t>(objective.size());
      objective.push_back(objective_of(unary[offset + s]));
      is_integer.push_back(1);
      column_upper.push_back(1.0);
    }
  }
  // Size check before anything big is built.
  {
    int64_t columns = static_cast<int64_t>(objective.size());
    for (size_t i = 0; i < coupled.size(); ++i) {
      const ModelEdge& edge = model.edges[coupled[i]];
      const int32_t columns_v = model.num_strategies(edge.v);
      const double* matrix = model.matrix(edge);
      for (int32_t p = 0; p < model.num_strategies(edge.u); ++p) {
        if (x_column[model.strategy_offset[edge.u] + p] < 0) continue;
        for (int32_t q = 0; q < columns_v; ++q) {
          columns += x_column[model.strategy_offset[edge.v] + q] >= 0 &&
                     matrix[int64_t{p} * columns_v + q] - edge_min[i] <= slack;
        }
      }
    }
    const double seconds = std::chrono::duration<double>(options.deadline - Clock::now()).count();
    if (columns > ilp_column_budget(seconds)) {
      outcome.status = IlpStatus::TooLarge;
      outcome.columns = columns;
      return outcome;
    }
  }
  Triplets a;
  int32_t row = 0;
  for (int32_t k = 0; k < n; ++k, ++row) {
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      if (const int32_t c = x_column[model.strategy_offset[k] + s]; c >= 0) a.add(row, c, 1.0);
    }
  }
  std::vector<double> row_lower(n, 1.0);
  std::vector<double> row_upper(n, 1.0);
  std::vector<std::pair<int32_t, int32_t>> incumbent_pairs;  // (column, edge) of the incumbent's y
  for (size_t i = 0; i < coupled.size(); ++i) {
    const ModelEdge& edge = model.edges[coupled[i]];
    const int32_t rows = model.num_strategies(edge.u);
    const int32_t columns = model.num_strategies(edge.v);
    const double* matrix = model.matrix(edge);
    const int32_t u_rows = row;  // one marginal row per strategy of u, then one per strategy of v
    const int32_t v_rows = row + rows;
    row += rows + columns;
    for (int32_t r = 0; r < rows + columns; ++r) {
      row_lower.push_back(0.0);
      row_upper.push_back(0.0);
    }
    for (int32_t p = 0; p < rows; ++p) {
      const int32_t xu = x_column[model.strategy_offset[edge.u] + p];
      if (xu >= 0) a.add(u_rows + p, xu, -1.0);
    }
    for (int32_t q = 0; q < columns; ++q) {
      const int32_t xv = x_column[model.strategy_offset[edge.v] + q];
      if (xv >= 0) a.add(v_rows + q, xv, -1.0);
    }
    for (int32_t p = 0; p < rows; ++p) {
      if (x_column[model.strategy_offset[edge.u] + p] < 0) continue;
      for (int32_t q = 0; q < columns; ++q) {
        if (x_column[model.strategy_offset[edge.v] + q] < 0) continue;
        const double value = matrix[int64_t{p} * columns + q];
        const bool in_incumbent =
            options.incumbent != nullptr && (*options.incumbent)[edge.u] == p && (*options.incumbent)[edge.v] == q;
        if (value - edge_min[i] > slack && !in_incumbent) continue;
        const auto column = static_cast<int32_t>(objective.size());
        objective.push_back(objective_of(value));
        is_integer.push_back(0);
        column_upper.push_back(1.0);
        a.add(u_rows + p, column, 1.0);
        a.add(v_rows + q, column, 1.0);
      }
    }
  }

  // Memory: one constraint per run of steps with the same live nodes whose usage depends on the
  // choice (a group), on the usage above each node's least. Either as dense rows (sum over the
  // live nodes <= rhs: what CBC handles best) or, when those would be too many nonzeros (tens of
  // thousands of nodes live at once on the contest's big instances), as a running sum: one
  // continuous P_g per group, P_g = P_{g-1} + (usage of nodes starting) - (usage of nodes ending),
  // P_g <= rhs_g, which has the same LP relaxation in linear size.
  if (model.has_limit) {
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
        if (x_column[model.strategy_offset[k] + s] >= 0) usage_max = std::max(usage_max, u[s]);
      }
      usage_range[k] = usage_max - usage_min[k];
      for (int32_t s = 0; s < model.num_strategies(k); ++s) {
        node_nonzeros[k] += x_column[model.strategy_offset[k] + s] >= 0 && u[s] > usage_min[k] ? 1 : 0;
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
      if (rhs < 0) {
        outcome.status = IlpStatus::Infeasible;  // even the least usage of every node overflows here
        return outcome;
      }
      if (!groups.empty()) groups.back().rhs = std::min(groups.back().rhs, rhs);
    }
    int64_t dense_nonzeros = 0;
    for (const Group& g : groups) dense_nonzeros += g.most > g.rhs ? g.nonzeros : 0;
    const auto add_usage = [&](int32_t r, int32_t k, double sign) {
      const double* u = model.node_usages(k);
      for (int32_t s = 0; s < model.num_strategies(k); ++s) {
        const int32_t c = x_column[model.strategy_offset[k] + s];
        if (c >= 0 && u[s] > usage_min[k]) a.add(r, c, sign * (u[s] - usage_min[k]));
      }
    };
    if (dense_nonzeros <= kDenseMemoryNonzeros) {
      std::vector<int32_t> live;  // sorted: a deterministic column order within each row
      for (const Group& g : groups) {
        for (int32_t k : ending[g.first]) live.erase(std::lower_bound(live.begin(), live.end(), k));
        for (int32_t k : starting[g.first]) live.insert(std::upper_bound(live.begin(), live.end(), k), k);
        if (g.most <= g.rhs) continue;  // cannot be violated
        for (int32_t k : live) add_usage(row, k, 1.0);
        row_lower.push_back(-DBL_MAX);
        row_upper.push_back(g.rhs);
        ++row;
      }
    } else {
      int32_t previous = -1;  // the running sum's column of the previous group
      for (const Group& g : groups) {
        const auto column = static_cast<int32_t>(objective.size());
        objective.push_back(0.0);
        is_integer.push_back(0);
        column_upper.push_back(g.most > g.rhs ? g.rhs : DBL_MAX);
        a.add(row, column, 1.0);
        if (previous >= 0) a.add(row, previous, -1.0);
        for (int32_t k : starting[g.first]) add_usage(row, k, -1.0);
        for (int32_t k : ending[g.first]) add_usage(row, k, 1.0);
        row_lower.push_back(0.0);
        row_upper.push_back(0.0);
        ++row;
        previous = column;
      }
    }
  }

  // Compressed sparse columns for CBC.
  const auto num_columns = static_cast<int32_t>(objective.size());
  const int32_t num_rows = row;
  std::vector<CoinBigIndex> start(num_columns + 1, 0);
  for (int32_t c : a.column) ++start[c + 1];
  for (int32_t c = 0; c < num_columns; ++c) start[c + 1] += start[c];
  std::vector<int32_t> index(a.row.size());
  std::vector<double> value(a.row.size());
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  for (size_t t = 0; t < a.row.size(); ++t) {
    const CoinBigIndex at = fill[a.column[t]]++;
    index[at] = a.row[t];
    value[at] = a.value[t];
  }
  const std::vector<double> column_lower(num_columns, 0.0);
  std::unique_lock<std::timed_mutex> cbc_lock(cbc_mutex(), std::defer_lock);
  if (!cbc_lock.try_lock_until(options.deadline)) return outcome;
  std::unique_ptr<Cbc_Model, CbcDeleter> cbc(Cbc_newModel());
  Cbc_loadProblem(cbc.get(), num_columns, num_rows, start.data(), index.data(), value.data(), column_lower.data(),
                  column_upper.data(), objective.data(), row_lower.data(), row_upper.data());
  for (int32_t c = 0; c < num_columns; ++c) {
    if (is_integer[c]) Cbc_setInteger(cbc.get(), c);
  }
  outcome.columns = num_columns;
  outcome.rows = num_rows;
  const double remaining = std::chrono::duration<double>(options.deadline - Clock::now()).count();
  Cbc_setParameter(cbc.get(), "timeMode", "elapsed");
  Cbc_setMaximumSeconds(cbc.get(), std::max(remaining, 0.01));
  Cbc_setLogLevel(cbc.get(), 0);
  if (options.incumbent != nullptr) {
    std::vector<int32_t> start_columns;
    std::vector<double> start_values;
    for (int32_t k = 0; k < n; ++k) {
      start_columns.push_back(x_column[model.strategy_offset[k] + (*options.incumbent)[k]]);
      start_values.push_back(1.0);
    }
    Cbc_setMIPStartI(cbc.get(), static_cast<int>(start_columns.size()), start_columns.data(), start_values.data());
  }
  Cbc_solve(cbc.get());

  if (Cbc_isProvenInfeasible(cbc.get()) && Cbc_bestSolution(cbc.get()) == nullptr) {
    outcome.status = IlpStatus::Infeasible;
    return outcome;
  }
  const double* solution = Cbc_bestSolution(cbc.get());
  if (solution == nullptr) return outcome;
  outcome.x.assign(n, 0);
  for (int32_t k = 0; k < n; ++k) {
    double best = -1;
    for (int32_t s = 0; s < model.num_strategies(k); ++s) {
      const int32_t c = x_column[model.strategy_offset[k] + s];
      if (c >= 0 && solution[c] > best) {
        best = solution[c];
        outcome.x[k] = s;
      }
    }
  }
  outcome.cost = model_cost(model, outcome.x);
  // With prohibitive terms in the answer, CBC proved optimality for the capped costs only.
  outcome.status =
      Cbc_isProvenOptimal(cbc.get()) && !is_forbidden_cost(outcome.cost) ? IlpStatus::Optimal : IlpStatus::Feasible;
  // With pruning, CBC bounds the optimum over solutions cheaper than the incumbent; the optimum
  // is at least the smaller of that and the cost found (which is at most the incumbent's).
  const double bound = Cbc_getBestPossibleObjValue(cbc.get()) + constant;
  if (outcome.status == IlpStatus::Optimal) {
    outcome.bound = outcome.cost;
  } else if (std::isfinite(bound) && std::fabs(bound) < 1e300) {
    outcome.bound = std::min(bound, outcome.cost);
  }
  return outcome;
}

}  // namespace px::plan

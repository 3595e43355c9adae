#include "plan/excess_tree.h"

#include <algorithm>

namespace px::plan {

// Non-propagating lazy adds: a node's tree_ value already includes its own lazy_, and queries add
// the lazies of the ancestors on the way down. No push-down, so max() can stay const.

ExcessTree::ExcessTree(const std::vector<double>& initial) : size_(static_cast<int32_t>(initial.size())) {
  if (size_ == 0) return;
  tree_.assign(4 * size_t(size_), 0);
  lazy_.assign(4 * size_t(size_), 0);
  build(1, 0, size_, initial);
}

void ExcessTree::build(int32_t node, int32_t lo, int32_t hi, const std::vector<double>& initial) {
  if (hi - lo == 1) {
    tree_[node] = initial[lo];
    return;
  }
  const int32_t mid = (lo + hi) / 2;
  build(2 * node, lo, mid, initial);
  build(2 * node + 1, mid, hi, initial);
  tree_[node] = std::max(tree_[2 * node], tree_[2 * node + 1]);
}

void ExcessTree::add(int32_t lo, int32_t hi, double delta) {
  if (lo < hi && delta != 0) add(1, 0, size_, lo, hi, delta);
}

void ExcessTree::add(int32_t node, int32_t lo, int32_t hi, int32_t a, int32_t b, double delta) {
  if (a <= lo && hi <= b) {
    tree_[node] += delta;
    lazy_[node] += delta;
    return;
  }
  const int32_t mid = (lo + hi) / 2;
  if (a < mid) add(2 * node, lo, mid, a, b, delta);
  if (b > mid) add(2 * node + 1, mid, hi, a, b, delta);
  tree_[node] = std::max(tree_[2 * node], tree_[2 * node + 1]) + lazy_[node];
}

double ExcessTree::max(int32_t lo, int32_t hi) const { return lo < hi ? max(1, 0, size_, lo, hi) : -kInfinity; }

double ExcessTree::max(int32_t node, int32_t lo, int32_t hi, int32_t a, int32_t b) const {
  if (a <= lo && hi <= b) return tree_[node];
  const int32_t mid = (lo + hi) / 2;
  double best = -kInfinity;
  if (a < mid) best = std::max(best, max(2 * node, lo, mid, a, b));
  if (b > mid) best = std::max(best, max(2 * node + 1, mid, hi, a, b));
  return best + lazy_[node];
}

int32_t ExcessTree::argmax_all() const {
  int32_t node = 1;
  int32_t lo = 0;
  int32_t hi = size_;
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (tree_[2 * node] >= tree_[2 * node + 1]) {
      node = 2 * node;
      hi = mid;
    } else {
      node = 2 * node + 1;
      lo = mid;
    }
  }
  return lo;
}

std::vector<double> ExcessTree::values() const {
  std::vector<double> out;
  out.reserve(size_);
  if (size_ > 0) collect(1, 0, size_, 0, out);
  return out;
}

void ExcessTree::collect(int32_t node, int32_t lo, int32_t hi, double pending, std::vector<double>& out) const {
  if (hi - lo == 1) {
    out.push_back(tree_[node] + pending);
    return;
  }
  const int32_t mid = (lo + hi) / 2;
  collect(2 * node, lo, mid, pending + lazy_[node], out);
  collect(2 * node + 1, mid, hi, pending + lazy_[node], out);
}

}  // namespace px::plan

#pragma once
// Memory excess over time for the fast solver (internal): excess[j] = usage at compressed step j
// minus the capacity there. A segment tree with lazy range add and range max, so that a move of one
// node (its usage changes over its whole interval) and the check "does this move fit" are both
// O(log steps), whatever the interval's length.

#include <cstdint>
#include <vector>

namespace px::plan {

class ExcessTree {
 public:
  ExcessTree() = default;
  explicit ExcessTree(const std::vector<double>& initial);

  int32_t size() const { return size_; }
  void add(int32_t lo, int32_t hi, double delta);  // excess[lo..hi) += delta
  double max(int32_t lo, int32_t hi) const;        // max of excess[lo..hi); -inf when empty
  double max_all() const { return size_ == 0 ? -kInfinity : tree_[1]; }
  int32_t argmax_all() const;          // a step where max_all() is reached
  std::vector<double> values() const;  // all excesses, in step order

 private:
  static constexpr double kInfinity = 1e300;
  void build(int32_t node, int32_t lo, int32_t hi, const std::vector<double>& initial);
  void add(int32_t node, int32_t lo, int32_t hi, int32_t a, int32_t b, double delta);
  double max(int32_t node, int32_t lo, int32_t hi, int32_t a, int32_t b) const;
  void collect(int32_t node, int32_t lo, int32_t hi, double pending, std::vector<double>& out) const;

  int32_t size_ = 0;
  std::vector<double> tree_;  // max of the subtree, including this node's own pending add
  std::vector<double> lazy_;  // added to the whole subtree, not yet pushed to the children
};

}  // namespace px::plan

// Uses an installed Parallax through its public headers only.
#include <exception>
#include <iostream>
#include <vector>

#include "parallax/core/tensor.h"
#include "parallax/ops/dispatch.h"

int main() {
  try {
    px::Tensor t = px::Tensor::from_vector({1, 2, 3, 4}, {2, 2});
    px::Tensor sum = px::call1("add", {t, t});
    std::vector<double> got = sum.to_vector<double>();
    const std::vector<double> want = {2, 4, 6, 8};
    if (got != want) {
      std::cerr << "install test: add(t, t) gave " << sum << ", expected [[2, 4], [6, 8]]\n";
      return 1;
    }
    std::cout << "install test: ok, add(t, t) = " << sum << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "install test: exception: " << e.what() << "\n";
    return 1;
  }
}

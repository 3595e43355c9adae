// The functional API of the elementwise family (include/parallax/ops/elementwise.h).
#include <string>

#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"
#include "parallax/ops/op_handles.h"

namespace px {

namespace {

Tensor scalar_call(std::string_view op, const Tensor& x, double scalar) { return call1(op, {x}, {{"scalar", scalar}}); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return call1(op::add(), {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return call1(op::sub(), {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return call1(op::mul(), {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return call1(op::div(), {a, b}); }
Tensor maximum(const Tensor& a, const Tensor& b) { return call1(op::maximum(), {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return call1(op::minimum(), {a, b}); }

Tensor add(const Tensor& x, double scalar) { return scalar_call("add_scalar", x, scalar); }
Tensor sub(const Tensor& x, double scalar) { return scalar_call("sub_scalar", x, scalar); }
Tensor mul(const Tensor& x, double scalar) { return scalar_call("mul_scalar", x, scalar); }
Tensor div(const Tensor& x, double scalar) { return scalar_call("div_scalar", x, scalar); }
Tensor add(double scalar, const Tensor& x) { return scalar_call("add_scalar", x, scalar); }
Tensor sub(double scalar, const Tensor& x) { return scalar_call("rsub_scalar", x, scalar); }
Tensor mul(double scalar, const Tensor& x) { return scalar_call("mul_scalar", x, scalar); }
Tensor div(double scalar, const Tensor& x) { return scalar_call("rdiv_scalar", x, scalar); }
Tensor pow(const Tensor& x, double exponent) { return call1(op::pow(), {x}, {{"exponent", exponent}}); }

Tensor neg(const Tensor& x) { return call1(op::neg(), {x}); }
Tensor abs(const Tensor& x) { return call1(op::abs(), {x}); }
Tensor exp(const Tensor& x) { return call1(op::exp(), {x}); }
Tensor log(const Tensor& x) { return call1(op::log(), {x}); }
Tensor sqrt(const Tensor& x) { return call1(op::sqrt(), {x}); }
Tensor rsqrt(const Tensor& x) { return call1(op::rsqrt(), {x}); }
Tensor tanh(const Tensor& x) { return call1(op::tanh(), {x}); }
Tensor sigmoid(const Tensor& x) { return call1(op::sigmoid(), {x}); }
Tensor relu(const Tensor& x) { return call1(op::relu(), {x}); }
Tensor silu(const Tensor& x) { return call1(op::silu(), {x}); }
Tensor gelu(const Tensor& x, std::string_view approximate) {
  return call1(op::gelu(), {x}, {{"approximate", std::string(approximate)}});
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return call1(op::where(), {cond, a, b}); }

Tensor eq(const Tensor& a, const Tensor& b) { return call1(op::eq(), {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return call1(op::ne(), {a, b}); }
Tensor lt(const Tensor& a, const Tensor& b) { return call1(op::lt(), {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return call1(op::le(), {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return call1(op::gt(), {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return call1(op::ge(), {a, b}); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator+(const Tensor& x, double scalar) { return add(x, scalar); }
Tensor operator-(const Tensor& x, double scalar) { return sub(x, scalar); }
Tensor operator*(const Tensor& x, double scalar) { return mul(x, scalar); }
Tensor operator/(const Tensor& x, double scalar) { return div(x, scalar); }
Tensor operator+(double scalar, const Tensor& x) { return add(scalar, x); }
Tensor operator-(double scalar, const Tensor& x) { return sub(scalar, x); }
Tensor operator*(double scalar, const Tensor& x) { return mul(scalar, x); }
Tensor operator/(double scalar, const Tensor& x) { return div(scalar, x); }
Tensor operator-(const Tensor& x) { return neg(x); }

}  // namespace px

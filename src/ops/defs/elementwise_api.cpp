// The functional API of the elementwise family (include/parallax/ops/elementwise.h).
#include <string>

#include "parallax/ops/dispatch.h"
#include "parallax/ops/elementwise.h"

namespace px {

namespace {

Tensor scalar_call(std::string_view op, const Tensor& x, double scalar) { return call1(op, {x}, {{"scalar", scalar}}); }

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return call1("add", {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return call1("sub", {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return call1("mul", {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return call1("div", {a, b}); }
Tensor maximum(const Tensor& a, const Tensor& b) { return call1("maximum", {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return call1("minimum", {a, b}); }

Tensor add(const Tensor& x, double scalar) { return scalar_call("add_scalar", x, scalar); }
Tensor sub(const Tensor& x, double scalar) { return scalar_call("sub_scalar", x, scalar); }
Tensor mul(const Tensor& x, double scalar) { return scalar_call("mul_scalar", x, scalar); }
Tensor div(const Tensor& x, double scalar) { return scalar_call("div_scalar", x, scalar); }
Tensor add(double scalar, const Tensor& x) { return scalar_call("add_scalar", x, scalar); }
Tensor sub(double scalar, const Tensor& x) { return scalar_call("rsub_scalar", x, scalar); }
Tensor mul(double scalar, const Tensor& x) { return scalar_call("mul_scalar", x, scalar); }
Tensor div(double scalar, const Tensor& x) { return scalar_call("rdiv_scalar", x, scalar); }
Tensor pow(const Tensor& x, double exponent) { return call1("pow", {x}, {{"exponent", exponent}}); }

Tensor neg(const Tensor& x) { return call1("neg", {x}); }
Tensor abs(const Tensor& x) { return call1("abs", {x}); }
Tensor exp(const Tensor& x) { return call1("exp", {x}); }
Tensor log(const Tensor& x) { return call1("log", {x}); }
Tensor sqrt(const Tensor& x) { return call1("sqrt", {x}); }
Tensor rsqrt(const Tensor& x) { return call1("rsqrt", {x}); }
Tensor tanh(const Tensor& x) { return call1("tanh", {x}); }
Tensor sigmoid(const Tensor& x) { return call1("sigmoid", {x}); }
Tensor relu(const Tensor& x) { return call1("relu", {x}); }
Tensor silu(const Tensor& x) { return call1("silu", {x}); }
Tensor gelu(const Tensor& x, std::string_view approximate) {
  return call1("gelu", {x}, {{"approximate", std::string(approximate)}});
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return call1("where", {cond, a, b}); }

Tensor eq(const Tensor& a, const Tensor& b) { return call1("eq", {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return call1("ne", {a, b}); }
Tensor lt(const Tensor& a, const Tensor& b) { return call1("lt", {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return call1("le", {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return call1("gt", {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return call1("ge", {a, b}); }

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

#include "parallax/core/tensor.h"

#include <cstring>
#include <ostream>
#include <sstream>

namespace px {

namespace {

std::shared_ptr<TensorImpl> make_impl(TensorKind kind, TensorMeta meta) {
  auto impl = std::make_shared<TensorImpl>();
  impl->kind = kind;
  impl->strides = contiguous_strides(meta.shape);
  impl->meta = std::move(meta);
  return impl;
}

void check_shape(const Shape& shape) {
  for (int64_t extent : shape) {
    if (extent < 0) throw ShapeError("negative extent in shape " + shape_str(shape));
  }
}

template <class T>
double load_as_double(const std::byte* base, int64_t index) {
  T value;
  std::memcpy(&value, base + index * static_cast<int64_t>(sizeof(T)), sizeof(T));
  if constexpr (std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return static_cast<double>(value);
  }
}

// Storage index (in elements) of row-major element `linear_index`.
int64_t storage_index(const Tensor& tensor, int64_t linear_index) {
  int64_t index = tensor.offset();
  const Shape& shape = tensor.shape();
  const Strides& strides = tensor.strides();
  for (size_t d = shape.size(); d-- > 0;) {
    index += (linear_index % shape[d]) * strides[d];
    linear_index /= shape[d];
  }
  return index;
}

}  // namespace

Tensor Tensor::empty(Shape shape, DType dtype) {
  check_shape(shape);
  auto impl = make_impl(TensorKind::Dense, TensorMeta{std::move(shape), dtype});
  impl->storage = std::make_shared<Storage>(impl->meta.nbytes());
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(Shape shape, DType dtype) {
  Tensor out = empty(std::move(shape), dtype);
  std::memset(out.storage()->data(), 0, static_cast<size_t>(out.storage()->nbytes()));
  return out;
}

Tensor Tensor::meta(Shape shape, DType dtype) {
  check_shape(shape);
  return Tensor(make_impl(TensorKind::Meta, TensorMeta{std::move(shape), dtype}));
}

Tensor Tensor::proxy(TensorMeta meta, std::shared_ptr<ProxyHandle> handle) {
  check_shape(meta.shape);
  auto impl = make_impl(TensorKind::Proxy, std::move(meta));
  impl->proxy = std::move(handle);
  return Tensor(std::move(impl));
}

Tensor Tensor::alias(const Tensor& base, Shape shape, Strides strides, int64_t offset) {
  PX_ASSERT(base.defined() && shape.size() == strides.size());
  if (!base.is_dense()) return Tensor::meta(std::move(shape), base.dtype());
  auto impl = std::make_shared<TensorImpl>();
  impl->kind = TensorKind::Dense;
  impl->meta = TensorMeta{std::move(shape), base.dtype()};
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->storage = base.storage();
  return Tensor(std::move(impl));
}

Tensor Tensor::from_vector(std::span<const double> values, Shape shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != px::numel(shape)) {
    throw ShapeError("from_vector: " + std::to_string(values.size()) + " values do not fill shape " + shape_str(shape) +
                     " (" + std::to_string(px::numel(shape)) + " elements)");
  }
  Tensor out = Tensor::empty(std::move(shape), dtype);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* data = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_same_v<T, BFloat16>) {
        data[i] = BFloat16(static_cast<float>(values[i]));
      } else {
        data[i] = static_cast<T>(values[i]);
      }
    }
  });
  return out;
}

Tensor Tensor::from_vector(std::initializer_list<double> values, Shape shape, DType dtype) {
  return from_vector(std::span<const double>(values.begin(), values.size()), std::move(shape), dtype);
}

Tensor Tensor::scalar(double value, DType dtype) { return from_vector({value}, {}, dtype); }

TensorKind Tensor::kind() const {
  if (!impl_) throw ValueError("use of an undefined Tensor");
  return impl_->kind;
}

const TensorMeta& Tensor::meta_info() const {
  if (!impl_) throw ValueError("use of an undefined Tensor");
  return impl_->meta;
}

int64_t Tensor::size(int64_t d) const { return shape()[normalize_dim(d, dim(), "Tensor::size")]; }

const Strides& Tensor::strides() const {
  kind();
  return impl_->strides;
}

int64_t Tensor::stride(int64_t d) const { return strides()[normalize_dim(d, dim(), "Tensor::stride")]; }

int64_t Tensor::offset() const {
  kind();
  return impl_->offset;
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // no element is out of place (PyTorch agrees)
  const Shape& dims = shape();
  const Strides& steps = strides();
  int64_t expected = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 1) continue;
    if (steps[i] != expected) return false;
    expected *= dims[i];
  }
  return true;
}

const std::shared_ptr<Storage>& Tensor::storage() const {
  kind();
  return impl_->storage;
}

const std::shared_ptr<ProxyHandle>& Tensor::proxy_handle() const {
  kind();
  return impl_->proxy;
}

const std::shared_ptr<SubclassHandle>& Tensor::subclass_instance() const {
  kind();
  return impl_->subclass;
}

bool Tensor::shares_storage_with(const Tensor& other) const {
  return defined() && other.defined() && storage() && storage() == other.storage();
}

void ProxyHandle::value_read(std::string_view what, const TensorMeta& meta) const {
  throw TraceError(std::string(what) + " reads the value of a traced tensor " + meta.str() +
                   "; a trace records no values, so data-dependent control flow cannot be captured");
}

void Tensor::check_data_access(DType requested) const {
  if (is_proxy()) impl_->proxy->value_read("data()", meta_info());
  if (!is_dense()) {
    throw ValueError("data access on a " +
                     std::string(is_meta()       ? "meta"
                                 : is_subclass() ? "subclass"
                                                 : "proxy") +
                     " tensor " + meta_info().str() + ": it has no storage");
  }
  if (requested != dtype()) {
    throw DTypeError("data<" + std::string(dtype_name(requested)) + ">() on a tensor of dtype " +
                     std::string(dtype_name(dtype())));
  }
}

void* Tensor::raw_data() const {
  if (!is_dense()) check_data_access(dtype());
  return impl_->storage->data() + impl_->offset * dtype_size(dtype());
}

double element_as_double(const Tensor& tensor, int64_t linear_index) {
  if (tensor.is_proxy()) tensor.proxy_handle()->value_read("reading an element", tensor.meta_info());
  if (!tensor.is_dense()) throw ValueError("reading values of a non-dense tensor " + tensor.meta_info().str());
  const std::byte* base = tensor.storage()->data();
  int64_t index = storage_index(tensor, linear_index);
  return visit_dtype(tensor.dtype(), [&](auto zero) { return load_as_double<decltype(zero)>(base, index); });
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  if (is_proxy()) impl_->proxy->value_read("to_vector()", meta_info());
  std::vector<T> out;
  int64_t count = numel();
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out.push_back(static_cast<T>(element_as_double(*this, i)));
  return out;
}

template <class T>
T Tensor::item() const {
  if (is_proxy()) impl_->proxy->value_read("item()", meta_info());
  if (numel() != 1) throw ValueError("item() on a tensor with " + std::to_string(numel()) + " elements");
  return static_cast<T>(element_as_double(*this, 0));
}

template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template bool Tensor::item<bool>() const;

namespace {

constexpr int64_t kEdgeItems = 3;  // printed at each end of a long dim

void print_value(std::ostream& os, const Tensor& tensor, int64_t linear_index) {
  double value = element_as_double(tensor, linear_index);
  if (tensor.dtype() == DType::Bool) {
    os << (value != 0 ? "true" : "false");
  } else if (tensor.dtype() == DType::Int64) {
    os << static_cast<int64_t>(value);
  } else {
    os << value;
  }
}

void print_dim(std::ostream& os, const Tensor& tensor, size_t dim, int64_t base) {
  const Shape& shape = tensor.shape();
  if (dim == shape.size()) {
    print_value(os, tensor, base);
    return;
  }
  int64_t extent = shape[dim];
  int64_t inner = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  os << "[";
  for (int64_t i = 0; i < extent; ++i) {
    if (extent > 2 * kEdgeItems && i == kEdgeItems) {
      os << "..., ";
      i = extent - kEdgeItems - 1;
      continue;
    }
    print_dim(os, tensor, dim + 1, base + i * inner);
    if (i + 1 < extent) os << ", ";
  }
  os << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) {
  if (!tensor.defined()) return os << "Tensor(undefined)";
  os << "Tensor(" << tensor.meta_info().str();
  if (tensor.is_meta()) return os << ", meta)";
  if (tensor.is_proxy()) return os << ", proxy)";
  if (tensor.is_subclass()) return os << ", subclass)";
  os << ", ";
  print_dim(os, tensor, 0, 0);
  return os << ")";
}

std::string to_string(const Tensor& tensor) {
  std::ostringstream os;
  os << tensor;
  return os.str();
}

}  // namespace px

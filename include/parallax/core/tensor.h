#pragma once
// px::Tensor: a cheap shared handle to a TensorImpl. An impl is one of
//   Dense - CPU storage plus shape, strides and an element offset;
//   Meta  - shape and dtype only (a 70B-element meta tensor costs nothing);
//   Proxy - a value in a graph under construction; the tracer that made it
//           owns a ProxyHandle that says which value it is.
//   Subclass - a SubclassHandle (below; subclass/subclass.h builds the protocol on
//           it) that implements ops on itself; shape and dtype are its outer ones.
//
// Methods that make new tensors (view, reshape, permute, ...) go through the op
// dispatcher (they are ops, defined in src/ops/), so they trace like any op.
// Views of dense tensors share storage.

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "parallax/core/dtype.h"
#include "parallax/core/error.h"
#include "parallax/core/shape.h"
#include "parallax/core/storage.h"

namespace px {

enum class TensorKind : uint8_t { Dense, Meta, Proxy, Subclass };

class Tensor;
struct OpDef;  // ops/op_def.h
class Attrs;   // ops/attrs.h

// What a subclass tensor holds, as the dispatcher sees it: a name for messages and the hook that
// implements each op called on it. The subclass layer builds the whole protocol on this
// (TensorSubclass: flatten, unflatten), so that the layers below it need nothing from it.
class SubclassHandle {
 public:
  virtual ~SubclassHandle() = default;
  // A short name for messages and guards ("ScaledTensor").
  virtual std::string type_name() const = 0;
  // Implements `op` on `args` (at least one of which holds this instance).
  virtual std::vector<Tensor> dispatch(const OpDef& op, const std::vector<Tensor>& args, const Attrs& attrs) = 0;
};

// Opaque identity of a traced value; the tracer derives from it.
class ProxyHandle {
 public:
  virtual ~ProxyHandle() = default;
  // Called when code reads the values of a proxy (`what`: "item()", "to_vector()", ...):
  // a trace cannot know them, so this throws TraceError; the tracer's override names the
  // module path where the read happened.
  [[noreturn]] virtual void value_read(std::string_view what, const TensorMeta& meta) const;
};

struct TensorImpl {
  TensorKind kind = TensorKind::Dense;
  TensorMeta meta;
  Strides strides;
  int64_t offset = 0;  // in elements
  std::shared_ptr<Storage> storage;
  std::shared_ptr<ProxyHandle> proxy;
  std::shared_ptr<SubclassHandle> subclass;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: holds no impl (e.g. "no gradient")
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- construction without the dispatcher (core level) ---
  // Contiguous dense tensor with UNINITIALIZED contents (kernels write every element).
  static Tensor empty(Shape shape, DType dtype = DType::Float32);
  // Contiguous dense tensor filled with zeros.
  static Tensor zeros(Shape shape, DType dtype = DType::Float32);
  static Tensor meta(Shape shape, DType dtype = DType::Float32);
  static Tensor proxy(TensorMeta meta, std::shared_ptr<ProxyHandle> handle);
  // A dense view sharing `base`'s storage (or a meta/proxy-free meta tensor for a meta base).
  static Tensor alias(const Tensor& base, Shape shape, Strides strides, int64_t offset);
  // Contiguous dense tensor holding `values` (converted to `dtype`).
  static Tensor from_vector(std::span<const double> values, Shape shape, DType dtype = DType::Float32);
  static Tensor from_vector(std::initializer_list<double> values, Shape shape, DType dtype = DType::Float32);
  static Tensor scalar(double value, DType dtype = DType::Float32);

  bool defined() const { return impl_ != nullptr; }
  TensorKind kind() const;
  bool is_meta() const { return kind() == TensorKind::Meta; }
  bool is_proxy() const { return kind() == TensorKind::Proxy; }
  bool is_dense() const { return kind() == TensorKind::Dense; }
  bool is_subclass() const { return kind() == TensorKind::Subclass; }

  const TensorMeta& meta_info() const;
  const Shape& shape() const { return meta_info().shape; }
  DType dtype() const { return meta_info().dtype; }
  int64_t dim() const { return meta_info().ndim(); }
  int64_t size(int64_t dim) const;
  int64_t numel() const { return meta_info().numel(); }
  const Strides& strides() const;
  int64_t stride(int64_t dim) const;
  int64_t offset() const;
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const;
  const std::shared_ptr<ProxyHandle>& proxy_handle() const;
  const std::shared_ptr<SubclassHandle>& subclass_instance() const;
  bool shares_storage_with(const Tensor& other) const;
  const std::shared_ptr<TensorImpl>& impl() const { return impl_; }
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

  // Pointer to the first element (storage + offset); dense only, T must match dtype.
  template <class T>
  T* data() const {
    check_data_access(dtype_of<T>());
    return reinterpret_cast<T*>(raw_data());
  }
  void* raw_data() const;  // dense only
  // All elements in row-major order, converted to T (any strides).
  template <class T>
  std::vector<T> to_vector() const;
  // The value of a one-element tensor.
  template <class T>
  T item() const;

  // --- views and conversions (ops; defined in src/ops/tensor_methods.cpp) ---
  Tensor view(Shape shape) const;     // requires compatible strides; -1 infers one dim
  Tensor reshape(Shape shape) const;  // a view when possible, else a copy
  Tensor permute(std::vector<int64_t> dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor expand(Shape shape) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;

 private:
  void check_data_access(DType requested) const;
  std::shared_ptr<TensorImpl> impl_;
};

// "Tensor(f32[2,3], [[1, 2, 3], [4, 5, 6]])"; long dims abbreviate with "...".
std::ostream& operator<<(std::ostream& os, const Tensor& tensor);
std::string to_string(const Tensor& tensor);

// Reads element `linear_index` (row-major over the logical shape) as double.
double element_as_double(const Tensor& tensor, int64_t linear_index);

extern template std::vector<float> Tensor::to_vector<float>() const;
extern template std::vector<double> Tensor::to_vector<double>() const;
extern template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
extern template std::vector<bool> Tensor::to_vector<bool>() const;
extern template float Tensor::item<float>() const;
extern template double Tensor::item<double>() const;
extern template int64_t Tensor::item<int64_t>() const;
extern template bool Tensor::item<bool>() const;

}  // namespace px

#pragma once
// Conversions between ordinary C++ values and px::Tree.
//
//   Tree t = px::to_tree(std::make_tuple(x, int64_t{4}, std::map<std::string, double>{{"lr", 0.1}}));
//   auto [x2, n, cfg] = px::from_tree<std::tuple<Tensor, int64_t, std::map<std::string, double>>>(t);
//
// Built in: Tensor; bool; every integral type (int64 leaves, range-checked on the way
// back); float and double; std::string and const char*; std::nullopt_t, std::nullptr_t
// and std::monostate (None); std::optional<T> (None or T); std::vector<T> and
// std::array<T, N> (lists); std::tuple and std::pair (tuples); std::map<std::string, T>
// (dicts, in key order); Tree itself.
//
// User structs: one line at namespace scope, in the struct's own namespace, lists
// the fields (up to 16). The struct becomes a custom node named after the type:
//
//   struct Config { int64_t dim; std::string act; };
//   PX_TREE_STRUCT(Config, dim, act)     // Tree: Config(dim=..., act=...)
//
// The macro defines two inline functions found by argument-dependent lookup, so
// registration is a compile-time fact: there is no process-wide table to write.
// Other types can specialize px::TreeConvert<T> (static `to` and `from`).
//
// from_tree raises ValueError naming the key path and what was expected, e.g.
// `from_tree: at [1]["dim"]: expected int, got string`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "parallax/core/error.h"
#include "parallax/pytree/tree.h"

namespace px {

// Specialize for a type of your own: `static Tree to(const T&)` and
// `static T from(const Tree&, const KeyPath& where)` (where: for error messages).
template <class T, class Enable = void>
struct TreeConvert;

template <class T>
Tree to_tree(const T& value) {
  return TreeConvert<T>::to(value);
}
template <class T>
T from_tree(const Tree& tree, const KeyPath& where = {}) {
  return TreeConvert<T>::from(tree, where);
}

namespace detail {
[[noreturn]] void tree_conversion_error(const KeyPath& where, std::string_view expected, const Tree& given);
// `from_tree: at [0]: int 300 is out of range [-128, 127]`.
[[noreturn]] void integer_range_error(const KeyPath& where, int64_t value, std::string_view min, std::string_view max);
// A custom node whose field `index` is named `given` where the registered struct has `expected`.
[[noreturn]] void tree_field_error(const KeyPath& where, std::string_view type_name, size_t index,
                                   std::string_view expected, std::string_view given);
// Checks that `tree` is a container of `kind` (with `size` children when size >= 0).
void expect_container(const Tree& tree, Tree::Kind kind, int64_t size, const KeyPath& where, std::string_view expected);
KeyPath index_path(const KeyPath& where, size_t index);
KeyPath key_path(const KeyPath& where, const std::string& key);
KeyPath field_path(const KeyPath& where, const std::string& field);
}  // namespace detail

template <>
struct TreeConvert<Tree> {
  static Tree to(const Tree& value) { return value; }
  static Tree from(const Tree& tree, const KeyPath&) { return tree; }
};

template <>
struct TreeConvert<Tensor> {
  static Tree to(const Tensor& value) { return Tree::tensor(value); }
  static Tensor from(const Tree& tree, const KeyPath& where) {
    if (tree.kind() != Tree::Kind::Tensor) detail::tree_conversion_error(where, "tensor", tree);
    return tree.as_tensor();
  }
};

template <>
struct TreeConvert<bool> {
  static Tree to(bool value) { return Tree::boolean(value); }
  static bool from(const Tree& tree, const KeyPath& where) {
    if (tree.kind() != Tree::Kind::Bool) detail::tree_conversion_error(where, "bool", tree);
    return tree.as_bool();
  }
};

template <class T>
struct TreeConvert<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static Tree to(T value) {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(int64_t)) {
      if (value > static_cast<T>(std::numeric_limits<int64_t>::max())) {
        throw ValueError("to_tree: unsigned value " + std::to_string(value) + " does not fit an int64 leaf");
      }
    }
    return Tree::integer(static_cast<int64_t>(value));
  }
  static T from(const Tree& tree, const KeyPath& where) {
    if (tree.kind() != Tree::Kind::Int) detail::tree_conversion_error(where, "int", tree);
    int64_t value = tree.as_int();
    // By hand rather than std::in_range, which rejects the character types.
    bool in_range;
    if constexpr (std::is_signed_v<T>) {
      in_range = value >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                 value <= static_cast<int64_t>(std::numeric_limits<T>::max());
    } else {
      in_range = value >= 0 && static_cast<uint64_t>(value) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    }
    if (!in_range) {
      detail::integer_range_error(where, value, std::to_string(std::numeric_limits<T>::min()),
                                  std::to_string(std::numeric_limits<T>::max()));
    }
    return static_cast<T>(value);
  }
};

template <class T>
struct TreeConvert<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static Tree to(T value) { return Tree::real(static_cast<double>(value)); }
  // An int leaf converts too (a Python-like widening); anything else is an error.
  static T from(const Tree& tree, const KeyPath& where) {
    if (tree.kind() == Tree::Kind::Double) return static_cast<T>(tree.as_double());
    if (tree.kind() == Tree::Kind::Int) return static_cast<T>(tree.as_int());
    detail::tree_conversion_error(where, "double", tree);
  }
};

template <>
struct TreeConvert<std::string> {
  static Tree to(const std::string& value) { return Tree::string(value); }
  static std::string from(const Tree& tree, const KeyPath& where) {
    if (tree.kind() != Tree::Kind::String) detail::tree_conversion_error(where, "string", tree);
    return tree.as_string();
  }
};

template <>
struct TreeConvert<const char*> {
  static Tree to(const char* value) { return Tree::string(value); }
};
template <size_t N>
struct TreeConvert<char[N]> {
  static Tree to(const char (&value)[N]) { return Tree::string(value); }
};

template <class T>
struct TreeConvert<T, std::enable_if_t<std::is_same_v<T, std::nullopt_t> || std::is_same_v<T, std::nullptr_t> ||
                                       std::is_same_v<T, std::monostate>>> {
  static Tree to(const T&) { return Tree::none(); }
  static T from(const Tree& tree, const KeyPath& where) {
    if (!tree.is_none()) detail::tree_conversion_error(where, "None", tree);
    if constexpr (std::is_same_v<T, std::nullopt_t>) {
      return std::nullopt;
    } else {
      return T{};
    }
  }
};

template <class T>
struct TreeConvert<std::optional<T>> {
  static Tree to(const std::optional<T>& value) { return value ? to_tree(*value) : Tree::none(); }
  static std::optional<T> from(const Tree& tree, const KeyPath& where) {
    if (tree.is_none()) return std::nullopt;
    return from_tree<T>(tree, where);
  }
};

template <class T, class A>
struct TreeConvert<std::vector<T, A>> {
  static Tree to(const std::vector<T, A>& values) {
    std::vector<Tree> items;
    items.reserve(values.size());
    for (const auto& value : values) items.push_back(to_tree<T>(value));
    return Tree::list(std::move(items));
  }
  static std::vector<T, A> from(const Tree& tree, const KeyPath& where) {
    detail::expect_container(tree, Tree::Kind::List, -1, where, "list");
    std::vector<T, A> values;
    values.reserve(tree.size());
    for (size_t i = 0; i < tree.size(); ++i) values.push_back(from_tree<T>(tree[i], detail::index_path(where, i)));
    return values;
  }
};

template <class T, size_t N>
struct TreeConvert<std::array<T, N>> {
  static Tree to(const std::array<T, N>& values) {
    std::vector<Tree> items;
    items.reserve(N);
    for (const auto& value : values) items.push_back(to_tree<T>(value));
    return Tree::list(std::move(items));
  }
  static std::array<T, N> from(const Tree& tree, const KeyPath& where) {
    detail::expect_container(tree, Tree::Kind::List, static_cast<int64_t>(N), where, "list of " + std::to_string(N));
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::array<T, N>{from_tree<T>(tree[I], detail::index_path(where, I))...};
    }
    (std::make_index_sequence<N>{});
  }
};

template <class... Ts>
struct TreeConvert<std::tuple<Ts...>> {
  static Tree to(const std::tuple<Ts...>& values) {
    return std::apply(
        [](const auto&... items) {
          std::vector<Tree> children;
          children.reserve(sizeof...(Ts));
          (children.push_back(to_tree<std::decay_t<decltype(items)>>(items)), ...);
          return Tree::tuple(std::move(children));
        },
        values);
  }
  static std::tuple<Ts...> from(const Tree& tree, const KeyPath& where) {
    detail::expect_container(tree, Tree::Kind::Tuple, static_cast<int64_t>(sizeof...(Ts)), where,
                             "tuple of " + std::to_string(sizeof...(Ts)));
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Ts...>{from_tree<Ts>(tree[I], detail::index_path(where, I))...};
    }
    (std::index_sequence_for<Ts...>{});
  }
};

template <class A, class B>
struct TreeConvert<std::pair<A, B>> {
  static Tree to(const std::pair<A, B>& value) {
    return Tree::tuple({to_tree<A>(value.first), to_tree<B>(value.second)});
  }
  static std::pair<A, B> from(const Tree& tree, const KeyPath& where) {
    detail::expect_container(tree, Tree::Kind::Tuple, 2, where, "tuple of 2");
    return {from_tree<A>(tree[0], detail::index_path(where, 0)), from_tree<B>(tree[1], detail::index_path(where, 1))};
  }
};

template <class T, class C, class A>
struct TreeConvert<std::map<std::string, T, C, A>> {
  static Tree to(const std::map<std::string, T, C, A>& values) {
    std::vector<std::pair<std::string, Tree>> entries;
    entries.reserve(values.size());
    for (const auto& [key, value] : values) entries.emplace_back(key, to_tree<T>(value));
    return Tree::dict(std::move(entries));
  }
  static std::map<std::string, T, C, A> from(const Tree& tree, const KeyPath& where) {
    detail::expect_container(tree, Tree::Kind::Dict, -1, where, "dict");
    std::map<std::string, T, C, A> values;
    for (size_t i = 0; i < tree.size(); ++i) {
      const std::string& key = tree.keys()[i];
      values.emplace(key, from_tree<T>(tree[i], detail::key_path(where, key)));
    }
    return values;
  }
};

// --- registered structs (PX_TREE_STRUCT) ---

namespace detail {

template <class S, class F>
struct TreeField {
  const char* name;
  F S::*member;
};
template <class S, class F>
constexpr TreeField<S, F> tree_field(const char* name, F S::*member) {
  return {name, member};
}

template <class T>
concept TreeStruct = requires(const T* tag) {
  px_tree_fields(tag);
  { px_tree_type_name(tag) } -> std::convertible_to<std::string_view>;
};

}  // namespace detail

template <detail::TreeStruct T>
struct TreeConvert<T> {
  static Tree to(const T& value) {
    std::vector<std::pair<std::string, Tree>> fields;
    std::apply([&](const auto&... field) { (fields.emplace_back(field.name, to_tree(value.*(field.member))), ...); },
               px_tree_fields(static_cast<const T*>(nullptr)));
    return Tree::custom(std::string(px_tree_type_name(static_cast<const T*>(nullptr))), std::move(fields));
  }
  static T from(const Tree& tree, const KeyPath& where) {
    const std::string_view type_name = px_tree_type_name(static_cast<const T*>(nullptr));
    auto fields = px_tree_fields(static_cast<const T*>(nullptr));
    constexpr auto count = std::tuple_size_v<decltype(fields)>;
    detail::expect_container(tree, Tree::Kind::Custom, static_cast<int64_t>(count), where, type_name);
    if (tree.type_name() != type_name) detail::tree_conversion_error(where, type_name, tree);
    T value{};
    size_t index = 0;
    std::apply(
        [&](const auto&... field) {
          ((tree.keys()[index] == field.name
                ? void(value.*(field.member) = from_tree<std::remove_cvref_t<decltype(value.*(field.member))>>(
                           tree[index], detail::field_path(where, field.name)))
                : detail::tree_field_error(where, type_name, index, field.name, tree.keys()[index]),
            ++index),
           ...);
        },
        fields);
    return value;
  }
};

}  // namespace px

// --- PX_TREE_STRUCT(Type, field, ...) ---
#define PX_TREE_FIELD_(Type, field) ::px::detail::tree_field(#field, &Type::field)
#define PX_TREE_EXPAND_(x) x
#define PX_TREE_FE_1(T, a) PX_TREE_FIELD_(T, a)
#define PX_TREE_FE_2(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_1(T, __VA_ARGS__))
#define PX_TREE_FE_3(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_2(T, __VA_ARGS__))
#define PX_TREE_FE_4(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_3(T, __VA_ARGS__))
#define PX_TREE_FE_5(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_4(T, __VA_ARGS__))
#define PX_TREE_FE_6(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_5(T, __VA_ARGS__))
#define PX_TREE_FE_7(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_6(T, __VA_ARGS__))
#define PX_TREE_FE_8(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_7(T, __VA_ARGS__))
#define PX_TREE_FE_9(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_8(T, __VA_ARGS__))
#define PX_TREE_FE_10(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_9(T, __VA_ARGS__))
#define PX_TREE_FE_11(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_10(T, __VA_ARGS__))
#define PX_TREE_FE_12(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_11(T, __VA_ARGS__))
#define PX_TREE_FE_13(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_12(T, __VA_ARGS__))
#define PX_TREE_FE_14(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_13(T, __VA_ARGS__))
#define PX_TREE_FE_15(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_14(T, __VA_ARGS__))
#define PX_TREE_FE_16(T, a, ...) PX_TREE_FIELD_(T, a), PX_TREE_EXPAND_(PX_TREE_FE_15(T, __VA_ARGS__))
#define PX_TREE_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, ...) N
#define PX_TREE_FE_NAME_(...)                                                                                        \
  PX_TREE_EXPAND_(PX_TREE_COUNT_(__VA_ARGS__, PX_TREE_FE_16, PX_TREE_FE_15, PX_TREE_FE_14, PX_TREE_FE_13,            \
                                 PX_TREE_FE_12, PX_TREE_FE_11, PX_TREE_FE_10, PX_TREE_FE_9, PX_TREE_FE_8,            \
                                 PX_TREE_FE_7, PX_TREE_FE_6, PX_TREE_FE_5, PX_TREE_FE_4, PX_TREE_FE_3, PX_TREE_FE_2, \
                                 PX_TREE_FE_1, ))

#define PX_TREE_STRUCT(Type, ...)                                                                \
  [[maybe_unused]] inline auto px_tree_fields(const Type*) {                                     \
    return ::std::make_tuple(PX_TREE_EXPAND_(PX_TREE_FE_NAME_(__VA_ARGS__)(Type, __VA_ARGS__))); \
  }                                                                                              \
  [[maybe_unused]] inline constexpr ::std::string_view px_tree_type_name(const Type*) { return #Type; }

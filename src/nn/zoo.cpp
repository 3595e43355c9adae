#include "parallax/nn/zoo.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <utility>

#include "core/json_reader.h"
#include "parallax/core/error.h"
#include "parallax/ops/nn.h"

namespace px::nn {

namespace {

// The zoo's names, in the order --help lists them; make_zoo_model knows each.
constexpr const char* kZooNames[] = {"mlp", "gpt-mini", "gpt2-124m", "llama-mini", "llama3-8b", "llama3-70b"};

std::optional<ModelSpec> make_zoo_model(std::string_view name) {
  ModelSpec spec;
  spec.name = std::string(name);
  if (name == "mlp") {
    spec.kind = ModelSpec::Kind::Mlp;
  } else if (name == "gpt-mini" || name == "gpt2-124m") {
    spec.kind = ModelSpec::Kind::Gpt;
    spec.gpt = name == "gpt-mini" ? gpt_mini() : gpt2_124m();
  } else if (name == "llama-mini" || name == "llama3-8b" || name == "llama3-70b") {
    spec.kind = ModelSpec::Kind::Llama;
    spec.llama = name == "llama-mini" ? llama_mini() : name == "llama3-8b" ? llama3_8b() : llama3_70b();
  } else {
    return std::nullopt;
  }
  return spec;
}

std::string joined_names() {
  std::string out;
  for (const std::string& name : zoo_names()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// Reads the JSON fields of one config; errors are ParseErrors at the field (line, column, name).
class ConfigReader {
 public:
  explicit ConfigReader(JsonValue object) : object_(std::move(object)) {}

  void positive(const char* field, int64_t& value) const {
    if (!object_.has(field)) return;
    const JsonValue v = object_.at(field);
    if (!v.raw().is_number_integer() || v.raw().get<int64_t>() < 1) fail(v, "a positive integer");
    value = v.raw().get<int64_t>();
  }
  void positive(const char* field, double& value) const {
    if (!object_.has(field)) return;
    const JsonValue v = object_.at(field);
    if (!v.raw().is_number() || !(v.raw().get<double>() > 0)) fail(v, "a positive number");
    value = v.raw().get<double>();
  }
  void dtype(DType& value) const {
    if (!object_.has("dtype")) return;
    const JsonValue v = object_.at("dtype");
    const std::string name = v.raw().is_string() ? v.raw().get<std::string>() : "";
    if (name == "f32" || name == "float32") {
      value = DType::Float32;
    } else if (name == "f64" || name == "float64") {
      value = DType::Float64;
    } else if (name == "bf16" || name == "bfloat16") {
      value = DType::BFloat16;
    } else {
      fail(v, "float32, float64 or bfloat16 (f32, f64, bf16)");
    }
  }
  // Fails on a field the kind does not have: a typo would otherwise be ignored silently.
  void only(std::initializer_list<const char*> allowed) const {
    for (const auto& [key, value] : object_.members()) {
      bool known = key == "kind" || key == "base" || key == "dtype";
      for (const char* name : allowed) known = known || key == name;
      if (!known) {
        std::string fields;
        for (const char* name : allowed) fields += std::string(fields.empty() ? "" : ", ") + name;
        value.fail("unknown field (this kind has kind, base, dtype, " + fields + ")");
      }
    }
  }

 private:
  [[noreturn]] static void fail(const JsonValue& value, const char* expected) {
    value.fail(std::string("must be ") + expected + ", got " + value.raw().dump());
  }
  JsonValue object_;
};

}  // namespace

std::string kind_name(ModelSpec::Kind kind) {
  switch (kind) {
    case ModelSpec::Kind::Mlp:
      return "mlp";
    case ModelSpec::Kind::Gpt:
      return "gpt";
    case ModelSpec::Kind::Llama:
      return "llama";
  }
  return "?";
}

std::string ModelSpec::describe() const {
  std::ostringstream out;
  out << name << ": ";
  switch (kind) {
    case Kind::Mlp:
      out << "MLP classifier, in " << mlp.in << ", hidden " << mlp.hidden << ", out " << mlp.out << ", "
          << dtype_name(mlp.dtype);
      break;
    case Kind::Gpt:
      out << (architecture.empty() ? "GPT" : architecture) << ", " << gpt.n_layers << " layers, dim " << gpt.dim << ", "
          << gpt.n_heads << " heads, vocab " << gpt.vocab << ", max_seq " << gpt.max_seq << ", "
          << dtype_name(gpt.dtype);
      if (gpt.ffn_hidden > 0 && gpt.ffn_hidden != 4 * gpt.dim) out << ", FFN " << gpt.ffn_hidden;
      if (!gpt.tie_embeddings) out << ", untied lm_head";
      break;
    case Kind::Llama:
      out << (architecture.empty() ? "LLaMA" : architecture) << ", " << llama.n_layers << " layers, dim " << llama.dim
          << ", " << llama.n_heads << " heads (" << llama.n_kv_heads << " KV), FFN " << llama.ffn_hidden << ", vocab "
          << llama.vocab << ", max_seq " << llama.max_seq << ", " << dtype_name(llama.dtype);
      if (llama.tie_embeddings) out << ", tied embeddings";
      if (llama.attention_bias) out << ", attention biases";
      if (llama.qkv_bias) out << ", q/k/v biases";
      if (llama.mlp_bias) out << ", MLP biases";
      if (llama.rope_scaling.scales()) out << ", rope scaled x" << llama.rope_scaling.factor;
      if (llama.sliding_window > 0) out << ", window " << llama.sliding_window;
      break;
  }
  return out.str();
}

int64_t ModelSpec::max_seq() const {
  switch (kind) {
    case Kind::Mlp:
      return 0;
    case Kind::Gpt:
      return gpt.max_seq;
    case Kind::Llama:
      return llama.max_seq;
  }
  return 0;
}

std::vector<std::string> zoo_names() { return {std::begin(kZooNames), std::end(kZooNames)}; }

ModelSpec zoo_model(std::string_view name) {
  if (std::optional<ModelSpec> spec = make_zoo_model(name)) return *spec;
  throw ValueError("unknown model '" + std::string(name) + "' (the zoo has " + joined_names() + ")");
}

ModelSpec model_from_json(const std::string& json_text, const std::string& where) {
  const JsonReader reader(json_text, where, "");
  const JsonValue object = reader.root();
  if (!object.raw().is_object()) object.fail("expected a JSON object, got " + object.raw().dump());
  const ConfigReader read(object);

  ModelSpec spec;
  if (object.has("base")) {
    const JsonValue base = object.at("base");
    std::optional<ModelSpec> named =
        base.raw().is_string() ? make_zoo_model(base.raw().get<std::string>()) : std::nullopt;
    if (!named) base.fail("must name a zoo model (" + joined_names() + "), got " + base.raw().dump());
    spec = *named;
  } else {
    if (!object.has("kind") || !object.at("kind").raw().is_string()) {
      object.fail_at("kind", "needs \"kind\" (\"mlp\", \"gpt\" or \"llama\") or \"base\" (a zoo model name)");
    }
    const std::string kind = object.text("kind");
    if (kind == "mlp") {
      spec = zoo_model("mlp");
    } else if (kind == "gpt") {
      spec = zoo_model("gpt-mini");
    } else if (kind == "llama") {
      spec = zoo_model("llama-mini");
    } else {
      object.fail_at("kind", "unknown kind \"" + kind + "\" (mlp, gpt or llama)");
    }
  }
  if (object.has("kind") && object.at("kind").raw() != kind_name(spec.kind)) {
    object.fail_at("kind", object.at("kind").raw().dump() + " does not match base " + object.at("base").raw().dump() +
                               " (a " + kind_name(spec.kind) + ")");
  }
  spec.name = where;
  switch (spec.kind) {
    case ModelSpec::Kind::Mlp:
      read.only({"in", "hidden", "out"});
      read.positive("in", spec.mlp.in);
      read.positive("hidden", spec.mlp.hidden);
      read.positive("out", spec.mlp.out);
      read.dtype(spec.mlp.dtype);
      break;
    case ModelSpec::Kind::Gpt:
      read.only({"vocab", "max_seq", "dim", "n_layers", "n_heads"});
      read.positive("vocab", spec.gpt.vocab);
      read.positive("max_seq", spec.gpt.max_seq);
      read.positive("dim", spec.gpt.dim);
      read.positive("n_layers", spec.gpt.n_layers);
      read.positive("n_heads", spec.gpt.n_heads);
      read.dtype(spec.gpt.dtype);
      if (spec.gpt.dim % spec.gpt.n_heads != 0) {
        object.fail_at("n_heads", "dim " + std::to_string(spec.gpt.dim) + " is not a multiple of n_heads " +
                                      std::to_string(spec.gpt.n_heads));
      }
      break;
    case ModelSpec::Kind::Llama:
      read.only(
          {"vocab", "max_seq", "dim", "n_layers", "n_heads", "n_kv_heads", "ffn_hidden", "norm_eps", "rope_theta"});
      read.positive("vocab", spec.llama.vocab);
      read.positive("max_seq", spec.llama.max_seq);
      read.positive("dim", spec.llama.dim);
      read.positive("n_layers", spec.llama.n_layers);
      read.positive("n_heads", spec.llama.n_heads);
      read.positive("n_kv_heads", spec.llama.n_kv_heads);
      read.positive("ffn_hidden", spec.llama.ffn_hidden);
      read.positive("norm_eps", spec.llama.norm_eps);
      read.positive("rope_theta", spec.llama.rope_theta);
      read.dtype(spec.llama.dtype);
      if (spec.llama.dim % spec.llama.n_heads != 0 || spec.llama.n_heads % spec.llama.n_kv_heads != 0) {
        object.fail_at("n_heads", "dim " + std::to_string(spec.llama.dim) + ", n_heads " +
                                      std::to_string(spec.llama.n_heads) + " and n_kv_heads " +
                                      std::to_string(spec.llama.n_kv_heads) +
                                      " do not divide (dim % n_heads and n_heads % n_kv_heads must be 0)");
      }
      break;
  }
  return spec;
}

ModelSpec load_model(const std::string& name_or_path) {
  if (std::optional<ModelSpec> spec = make_zoo_model(name_or_path)) return *spec;
  std::error_code error;
  const bool directory = std::filesystem::is_directory(name_or_path, error);
  const std::string path = directory ? (std::filesystem::path(name_or_path) / "config.json").string() : name_or_path;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw ValueError(directory ? "'" + name_or_path + "' is a directory without a Hugging Face config.json"
                               : "'" + name_or_path + "' is neither a zoo model (" + joined_names() +
                                     "), a config file nor a Hugging Face model directory");
  }
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  if (!file) throw ValueError("cannot read model config '" + path + "'");
  return directory ? model_from_hf_config(text.str(), path) : model_from_json(text.str(), path);
}

MlpLoss::MlpLoss(const MlpConfig& config) {
  mlp_ = register_module("mlp", std::make_shared<MLPModel>(config.in, config.hidden, config.out, config.dtype));
}

Tensor MlpLoss::forward(const Tensor& x, const Tensor& y) { return cross_entropy((*mlp_)(x), y); }

}  // namespace px::nn

// Hugging Face config.json -> ModelSpec for the architectures Parallax builds: GPT2LMHeadModel and
// the LLaMA family (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM).
//
// Every field of a config is in one of three lists below: read into the model, checked against
// the only value Parallax builds (a field that changes the math and is set otherwise is an error
// naming it), or known not to change the forward pass (generation settings, token ids,
// initialisation). A field in none of them is an error too: a newer transformers may add one
// that matters, and a silently different model is the worst outcome.

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "core/json_reader.h"
#include "parallax/core/error.h"
#include "parallax/nn/zoo.h"

namespace px::nn {

namespace {

using nlohmann::json;

// Fields of every transformers config (PretrainedConfig and its generation defaults) that do not
// change a causal LM's forward pass or its weights.
const std::set<std::string>& generic_fields() {
  static const std::set<std::string> fields = {"_name_or_path",
                                               "_commit_hash",
                                               "_attn_implementation_autoset",
                                               "attn_implementation",
                                               "transformers_version",
                                               "architectures",
                                               "model_type",
                                               "torch_dtype",
                                               "dtype",
                                               "use_cache",
                                               "initializer_range",
                                               "bos_token_id",
                                               "eos_token_id",
                                               "pad_token_id",
                                               "sep_token_id",
                                               "decoder_start_token_id",
                                               "return_dict",
                                               "output_hidden_states",
                                               "output_attentions",
                                               "torchscript",
                                               "use_bfloat16",
                                               "tf_legacy_loss",
                                               "pruned_heads",
                                               "chunk_size_feed_forward",
                                               "is_encoder_decoder",
                                               "is_decoder",
                                               "cross_attention_hidden_size",
                                               "tie_encoder_decoder",
                                               "max_length",
                                               "min_length",
                                               "do_sample",
                                               "early_stopping",
                                               "num_beams",
                                               "num_beam_groups",
                                               "diversity_penalty",
                                               "temperature",
                                               "top_k",
                                               "top_p",
                                               "typical_p",
                                               "repetition_penalty",
                                               "length_penalty",
                                               "no_repeat_ngram_size",
                                               "encoder_no_repeat_ngram_size",
                                               "bad_words_ids",
                                               "num_return_sequences",
                                               "output_scores",
                                               "return_dict_in_generate",
                                               "forced_bos_token_id",
                                               "forced_eos_token_id",
                                               "remove_invalid_values",
                                               "exponential_decay_length_penalty",
                                               "suppress_tokens",
                                               "begin_suppress_tokens",
                                               "finetuning_task",
                                               "id2label",
                                               "label2id",
                                               "tokenizer_class",
                                               "prefix",
                                               "task_specific_params",
                                               "problem_type",
                                               "tie_word_embeddings"};
  return fields;
}

// Reads one config object; errors are ParseErrors naming the file, the line and column, and the
// field's JSON path ("config.json: rope_scaling.factor: must be a positive number, got 0").
class HfReader {
 public:
  HfReader(JsonValue object, std::string where) : object_(std::move(object)), where_(std::move(where)) {}

  bool has(const std::string& field) const { return object_.has(field) && !object_.at(field).raw().is_null(); }
  const json& at(const std::string& field) const { return object_.at(field).raw(); }
  JsonValue value(const std::string& field) const { return object_.at(field); }

  int64_t positive_int(const std::string& field) const {
    if (!has(field)) object_.fail("missing \"" + field + "\", a positive integer");
    const json& v = at(field);
    if (!v.is_number_integer() || v.get<int64_t>() < 1) fail(field, "must be a positive integer, got " + v.dump());
    return v.get<int64_t>();
  }
  int64_t positive_int(const std::string& field, int64_t fallback) const {
    return has(field) ? positive_int(field) : fallback;
  }
  // Member `field` of `object` (this config or one of its objects), which must be a positive number.
  static double positive_number(const JsonValue& object, const std::string& field) {
    if (!object.has(field)) object.fail("missing \"" + field + "\", a positive number");
    const JsonValue v = object.at(field);
    if (!v.raw().is_number() || !(v.raw().get<double>() > 0))
      v.fail("must be a positive number, got " + v.raw().dump());
    return v.raw().get<double>();
  }
  double positive_number(const std::string& field, double fallback) const {
    return has(field) ? positive_number(object_, field) : fallback;
  }
  bool boolean(const std::string& field, bool fallback) const {
    if (!has(field)) return fallback;
    if (!at(field).is_boolean()) fail(field, "must be true or false, got " + at(field).dump());
    return at(field).get<bool>();
  }
  std::string string(const std::string& field, const std::string& fallback) const {
    if (!has(field)) return fallback;
    if (!at(field).is_string()) fail(field, "must be a string, got " + at(field).dump());
    return at(field).get<std::string>();
  }
  // Probabilities that only training's dropout reads: one note for those set, since Parallax
  // trains without dropout.
  void dropout(std::initializer_list<const char*> fields, std::vector<std::string>& notes) const {
    std::string set;
    for (const char* field : fields) {
      if (!has(field)) continue;
      if (!at(field).is_number()) fail(field, "must be a number, got " + at(field).dump());
      if (at(field).get<double>() != 0.0)
        set += (set.empty() ? "" : ", ") + std::string(field) + " " + at(field).dump();
    }
    if (!set.empty()) {
      notes.push_back(where_ + ": " + set +
                      " ignored: Parallax's models have no dropout (the same forward pass as transformers' eval "
                      "mode; training differs from its train mode)");
    }
  }
  // A field whose other values change the model: anything but `expected` is refused.
  void require(const std::string& field, const json& expected, const std::string& why) const {
    if (has(field) && at(field) != expected) {
      fail(field, "is " + at(field).dump() + "; Parallax builds only " + expected.dump() + " (" + why + ")");
    }
  }
  // Refuses a field that is in neither `known` nor the generic list.
  void only(const std::set<std::string>& known, const std::string& architecture) const {
    for (const auto& [key, value] : object_.members()) {
      if (known.contains(key) || generic_fields().contains(key)) continue;
      value.fail("unknown field for " + architecture +
                 " (Parallax does not know whether it changes the model, so it does not guess)");
    }
  }
  // A ParseError at `field` (at the config when it has none).
  [[noreturn]] void fail(const std::string& field, const std::string& what) const { object_.fail_at(field, what); }
  const std::string& where() const { return where_; }

 private:
  JsonValue object_;
  std::string where_;
};

// torch_dtype (or transformers 5's dtype) -> the model's dtype; float16 has no Parallax dtype and
// runs in float32, said in a note.
DType read_dtype(const HfReader& read, std::vector<std::string>& notes) {
  const std::string field = read.has("dtype") ? "dtype" : "torch_dtype";
  const std::string name = read.string(field, "float32");
  if (name == "float32") return DType::Float32;
  if (name == "bfloat16") return DType::BFloat16;
  if (name == "float64") return DType::Float64;
  if (name == "float16") {
    notes.push_back(read.where() + ": " + field +
                    " float16 runs as float32 (Parallax has no float16 dtype; the weights widen exactly)");
    return DType::Float32;
  }
  read.fail(field, "is \"" + name + "\"; Parallax builds float32, bfloat16 or float64 (and float16 as float32)");
}

ModelSpec gpt2_from(const HfReader& read, const std::string& architecture) {
  read.only({"vocab_size",
             "n_positions",
             "n_ctx",
             "n_embd",
             "n_layer",
             "n_head",
             "n_inner",
             "activation_function",
             "resid_pdrop",
             "embd_pdrop",
             "attn_pdrop",
             "summary_first_dropout",
             "layer_norm_epsilon",
             "scale_attn_weights",
             "scale_attn_by_inverse_layer_idx",
             "reorder_and_upcast_attn",
             "add_cross_attention",
             "summary_type",
             "summary_use_proj",
             "summary_activation",
             "summary_proj_to_labels"},
            architecture);
  ModelSpec spec;
  spec.kind = ModelSpec::Kind::Gpt;
  GPTConfig& gpt = spec.gpt;
  gpt.vocab = read.positive_int("vocab_size");
  gpt.max_seq = read.positive_int("n_positions");
  gpt.dim = read.positive_int("n_embd");
  gpt.n_layers = read.positive_int("n_layer");
  gpt.n_heads = read.positive_int("n_head");
  gpt.ffn_hidden = read.positive_int("n_inner", 4 * gpt.dim);
  gpt.norm_eps = read.positive_number("layer_norm_epsilon", 1e-5);
  gpt.tie_embeddings = read.boolean("tie_word_embeddings", true);
  const std::string activation = read.string("activation_function", "gelu_new");
  if (activation != "gelu_new" && activation != "gelu_pytorch_tanh") {
    read.fail("activation_function", "is \"" + activation +
                                         "\"; Parallax's GPT uses gelu with the tanh approximation (gelu_new, "
                                         "gelu_pytorch_tanh)");
  }
  read.require("scale_attn_weights", true, "attention scores are scaled by 1/sqrt(head dim)");
  read.require("scale_attn_by_inverse_layer_idx", false, "no per-layer scaling of attention");
  read.require("add_cross_attention", false, "a decoder-only model");
  if (read.has("n_ctx") && read.at("n_ctx") != read.at("n_positions")) {
    read.fail("n_ctx", "is " + read.at("n_ctx").dump() + " but n_positions is " + read.at("n_positions").dump() +
                           "; they must agree");
  }
  read.dropout({"resid_pdrop", "embd_pdrop", "attn_pdrop"}, spec.notes);
  gpt.dtype = read_dtype(read, spec.notes);
  if (gpt.dim % gpt.n_heads != 0) {
    read.fail("n_embd", std::to_string(gpt.dim) + " is not a multiple of n_head " + std::to_string(gpt.n_heads));
  }
  return spec;
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5, which also holds rope_theta).
void read_rope(const HfReader& read, LlamaConfig& llama) {
  llama.rope_theta = read.positive_number("rope_theta", 10000.0);
  for (const char* field : {"rope_scaling", "rope_parameters"}) {
    if (!read.has(field)) continue;
    const JsonValue rope = read.value(field);
    if (!rope.raw().is_object()) rope.fail("must be an object or null, got " + rope.raw().dump());
    if (rope.has("rope_theta")) llama.rope_theta = HfReader::positive_number(rope, "rope_theta");
    const std::string key = rope.has("rope_type") ? "rope_type" : "type";
    const std::string type =
        rope.has(key) && rope.at(key).raw().is_string() ? rope.at(key).raw().get<std::string>() : "";
    if (type == "default") continue;
    if (type != "llama3") {
      rope.fail_at(key, "is " + (rope.has(key) ? rope.at(key).raw().dump() : "missing") +
                            "; Parallax builds rope without scaling (\"default\") or Llama 3's (\"llama3\")");
    }
    llama.rope_scaling.factor = HfReader::positive_number(rope, "factor");
    llama.rope_scaling.low_freq_factor = HfReader::positive_number(rope, "low_freq_factor");
    llama.rope_scaling.high_freq_factor = HfReader::positive_number(rope, "high_freq_factor");
    const double context = HfReader::positive_number(rope, "original_max_position_embeddings");
    if (context != std::floor(context)) {
      rope.fail_at("original_max_position_embeddings", "must be an integer, got " + std::to_string(context));
    }
    llama.rope_scaling.original_max_seq = static_cast<int64_t>(context);
    if (!(llama.rope_scaling.high_freq_factor > llama.rope_scaling.low_freq_factor)) {
      rope.fail_at("high_freq_factor", "must exceed low_freq_factor");
    }
  }
}

ModelSpec llama_from(const HfReader& read, const std::string& architecture) {
  const bool mistral = architecture == "MistralForCausalLM";
  const bool qwen2 = architecture == "Qwen2ForCausalLM";
  std::set<std::string> known = {"vocab_size",
                                 "hidden_size",
                                 "intermediate_size",
                                 "num_hidden_layers",
                                 "num_attention_heads",
                                 "num_key_value_heads",
                                 "max_position_embeddings",
                                 "rms_norm_eps",
                                 "rope_theta",
                                 "rope_scaling",
                                 "rope_parameters",
                                 "hidden_act",
                                 "attention_dropout",
                                 "pretraining_tp",
                                 "head_dim"};
  if (!mistral && !qwen2) known.insert({"attention_bias", "mlp_bias"});
  if (mistral) known.insert("sliding_window");
  if (qwen2) known.insert({"use_sliding_window", "sliding_window", "max_window_layers", "layer_types"});
  read.only(known, architecture);

  ModelSpec spec;
  spec.kind = ModelSpec::Kind::Llama;
  LlamaConfig& llama = spec.llama;
  llama.vocab = read.positive_int("vocab_size");
  llama.dim = read.positive_int("hidden_size");
  llama.ffn_hidden = read.positive_int("intermediate_size");
  llama.n_layers = read.positive_int("num_hidden_layers");
  llama.n_heads = read.positive_int("num_attention_heads");
  llama.n_kv_heads = read.positive_int("num_key_value_heads", llama.n_heads);
  llama.max_seq = read.positive_int("max_position_embeddings");
  llama.norm_eps = read.positive_number("rms_norm_eps", 1e-6);
  llama.tie_embeddings = read.boolean("tie_word_embeddings", false);
  llama.attention_bias = read.boolean("attention_bias", false);
  llama.mlp_bias = read.boolean("mlp_bias", false);
  llama.qkv_bias = qwen2;
  read_rope(read, llama);
  read.require("hidden_act", "silu", "the SwiGLU MLP");
  read.dropout({"attention_dropout"}, spec.notes);
  if (llama.dim % llama.n_heads != 0 || llama.n_heads % llama.n_kv_heads != 0) {
    read.fail("num_attention_heads", std::to_string(llama.n_heads) + " must divide hidden_size " +
                                         std::to_string(llama.dim) + " and be a multiple of num_key_value_heads " +
                                         std::to_string(llama.n_kv_heads));
  }
  if (read.has("head_dim") && read.positive_int("head_dim") != llama.dim / llama.n_heads) {
    read.fail("head_dim", "is " + read.at("head_dim").dump() + "; Parallax builds head_dim = hidden_size / " +
                              "num_attention_heads = " + std::to_string(llama.dim / llama.n_heads));
  }
  if (read.has("pretraining_tp") && read.at("pretraining_tp") != 1) {
    spec.notes.push_back(read.where() + ": pretraining_tp " + read.at("pretraining_tp").dump() +
                         " ignored: it splits transformers' matmuls into slices, the same math up to rounding");
  }
  if (mistral && read.has("sliding_window")) llama.sliding_window = read.positive_int("sliding_window");
  if (qwen2) {
    read.require("use_sliding_window", false, "full causal attention in every layer");
    if (read.has("layer_types")) {
      const JsonValue types = read.value("layer_types");
      if (!types.raw().is_array()) types.fail("must be a list, got " + types.raw().dump());
      for (const JsonValue& type : types.elements()) {
        if (type.raw() != "full_attention") {
          type.fail("is " + type.raw().dump() + "; Parallax builds \"full_attention\" in every layer");
        }
      }
    }
  }
  llama.dtype = read_dtype(read, spec.notes);
  return spec;
}

// The architecture a config describes: its one `architectures` entry, else the one its model_type
// implies.
std::string architecture_of(const HfReader& read) {
  if (read.has("architectures")) {
    const json& list = read.at("architectures");
    if (!list.is_array() || list.size() != 1 || !list[0].is_string()) {
      read.fail("architectures", "must list one architecture, got " + list.dump());
    }
    return list[0].get<std::string>();
  }
  if (!read.has("model_type")) read.fail("architectures", "missing \"architectures\" (and \"model_type\")");
  const std::string type = read.string("model_type", "");
  if (type == "gpt2") return "GPT2LMHeadModel";
  if (type == "llama") return "LlamaForCausalLM";
  if (type == "mistral") return "MistralForCausalLM";
  if (type == "qwen2") return "Qwen2ForCausalLM";
  read.fail("model_type", "is \"" + type + "\", which Parallax does not build");
}

}  // namespace

std::vector<std::string> hf_architectures() {
  return {"GPT2LMHeadModel", "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};
}

ModelSpec model_from_hf_config(const std::string& json_text, const std::string& where) {
  const JsonReader reader(json_text, where, "");
  if (!reader.root().raw().is_object()) reader.root().fail("expected a JSON object, got " + reader.root().raw().dump());
  const HfReader read(reader.root(), where);
  const std::string architecture = architecture_of(read);
  ModelSpec spec;
  if (architecture == "GPT2LMHeadModel") {
    spec = gpt2_from(read, architecture);
  } else if (architecture == "LlamaForCausalLM" || architecture == "MistralForCausalLM" ||
             architecture == "Qwen2ForCausalLM") {
    spec = llama_from(read, architecture);
  } else {
    std::string supported;
    for (const std::string& name : hf_architectures()) supported += (supported.empty() ? "" : ", ") + name;
    read.fail("architectures", "is \"" + architecture + "\"; Parallax builds " + supported);
  }
  spec.name = where;
  spec.architecture = architecture;
  return spec;
}

}  // namespace px::nn

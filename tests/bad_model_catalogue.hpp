#pragma once
// The catalogue of bad checkpoint folders, one entry per kind of fault, shared by the core
// tests (lm::load_model refuses each with messages naming the file and the key, line or
// tensor), the command line and the app (opening one keeps the current model and says why).
// Each entry writes its folder from a good tiny GPT-2 checkpoint and spoils one thing.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "model/gpt2/checkpoint.hpp"

namespace attn::testing {

struct BadModel {
    std::string item;                                        // what is wrong, as the catalogue names it
    std::string folder;                                      // written under this name
    std::function<void(const std::string& folder)> write;    // puts the folder on disk, replacing what was there
    std::vector<std::string> says;                           // every fragment the messages hold, beside the folder's path
};

// 2 layers, 2 heads, d = 8, 16 positions, d_ff = 32; vocab_size 260 for a tokenizer of 259
// tokens (the 256 byte symbols and 3 merges), so the embedding has one row of padding.
inline gpt2::Config tiny_config() {
    gpt2::Config config;
    config.n_layer = 2;
    config.n_head = 2;
    config.n_embd = 8;
    config.n_positions = 16;
    config.vocab_size = 260;
    config.n_inner = 32;
    return config;
}

inline gpt2::Checkpoint tiny_checkpoint(std::uint64_t seed = 1) {
    std::vector<std::string> errors;
    auto tokenizer = tok::ByteLevelBpe::from_merges({{"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}}, errors);
    return gpt2::random_checkpoint(tiny_config(), seed, std::move(*tokenizer));
}

inline void write_tiny_checkpoint(const std::string& folder, const gpt2::CheckpointWriteOptions& options = {}) {
    std::filesystem::remove_all(folder);
    std::string error;
    if (!gpt2::write_checkpoint(folder, tiny_checkpoint(), options, &error)) throw std::runtime_error(error);
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A good folder whose config.json has one key replaced (or removed, for a null value).
inline std::function<void(const std::string&)> with_config(const std::string& key, const nlohmann::json& value) {
    return [key, value](const std::string& folder) {
        write_tiny_checkpoint(folder);
        nlohmann::json config = nlohmann::json::parse(read_file(folder + "/config.json"));
        if (value.is_null()) config.erase(key);
        else config[key] = value;
        write_file(folder + "/config.json", config.dump(2));
    };
}

// A good folder with one file's text replaced.
inline std::function<void(const std::string&)> with_file(const std::string& name, const std::string& text) {
    return [name, text](const std::string& folder) {
        write_tiny_checkpoint(folder);
        write_file(folder + "/" + name, text);
    };
}

// A good folder with one file removed.
inline std::function<void(const std::string&)> without_file(const std::string& name) {
    return [name](const std::string& folder) {
        write_tiny_checkpoint(folder);
        std::filesystem::remove(folder + "/" + name);
    };
}

// A good folder whose model.safetensors is written from an edited list of tensors.
inline std::function<void(const std::string&)> with_tensors(std::function<void(std::vector<safetensors::NamedTensor>&)> edit) {
    return [edit](const std::string& folder) {
        write_tiny_checkpoint(folder);
        const gpt2::Checkpoint checkpoint = tiny_checkpoint();
        std::vector<safetensors::NamedTensor> tensors;
        std::string error;
        gpt2::checkpoint_tensors(checkpoint, false, tensors, &error);
        edit(tensors);
        if (!safetensors::write_safetensors(folder + "/model.safetensors", tensors, {}, safetensors::Dtype::F32, &error))
            throw std::runtime_error(error);
    };
}

// A safetensors file from its header's text and the size of its data section; the data
// are a hole (a sparse file), so a file of a hundred gigabytes takes no disk.
inline void write_raw_safetensors(const std::string& path, const std::string& header, std::uint64_t data_size) {
    std::string length(8, '\0');
    for (int i = 0; i < 8; ++i) length[static_cast<std::size_t>(i)] = static_cast<char>(static_cast<std::uint64_t>(header.size()) >> (8 * i));
    write_file(path, length + header);
    std::filesystem::resize_file(path, 8 + header.size() + data_size);
}

// A good folder whose model.safetensors has its header edited as JSON (the data kept).
inline std::function<void(const std::string&)> with_header(std::function<void(nlohmann::json&)> edit) {
    return [edit](const std::string& folder) {
        write_tiny_checkpoint(folder);
        const std::string bytes = read_file(folder + "/model.safetensors");
        std::uint64_t length = 0;
        for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
        nlohmann::json header = nlohmann::json::parse(bytes.substr(8, length));
        edit(header);
        const std::string text = header.dump();
        std::string out(8, '\0');
        for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
        write_file(folder + "/model.safetensors", out + text + bytes.substr(8 + length));
    };
}

// A good folder with one of its files replaced by a FIFO, or by a link to target (a link to
// itself when target is empty).
inline std::function<void(const std::string&)> as_fifo(const std::string& name) {
    return [name](const std::string& folder) {
        write_tiny_checkpoint(folder);
        std::filesystem::remove(folder + "/" + name);
        ::mkfifo((folder + "/" + name).c_str(), 0600);
    };
}
inline std::function<void(const std::string&)> as_link(const std::string& name, const std::string& target) {
    return [name, target](const std::string& folder) {
        write_tiny_checkpoint(folder);
        const std::string path = folder + "/" + name;
        std::filesystem::remove(path);
        std::filesystem::create_symlink(target.empty() ? std::filesystem::path(name) : std::filesystem::path(target), path);
    };
}

// GPT-2 with d = 16384 and a vocabulary of 2^22 rows, stored as F16 in a sparse file: 130 GiB
// of weights on disk, read in place (as F16), more than any machine this runs on has free.
inline void write_larger_than_memory(const std::string& folder) {
    write_tiny_checkpoint(folder);
    gpt2::Config config = tiny_config();
    config.n_layer = 1;
    config.n_head = 1;
    config.n_embd = 16384;
    config.n_inner = 16;
    config.vocab_size = 1 << 22;
    write_file(folder + "/config.json", gpt2::config_json(config));
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const gpt2::WeightShape& weight : gpt2::weight_shapes(config)) {
        std::uint64_t bytes = 2;
        for (const std::int64_t dim : weight.shape) bytes *= static_cast<std::uint64_t>(dim);
        header[weight.name] = {{"dtype", "F16"}, {"shape", weight.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    write_raw_safetensors(folder + "/model.safetensors", header.dump(), offset);
}

inline std::vector<BadModel> bad_model_catalogue() {
    using nlohmann::json;
    auto drop = [](const std::string& name) {
        return with_tensors([name](std::vector<safetensors::NamedTensor>& tensors) {
            for (auto it = tensors.begin(); it != tensors.end(); ++it)
                if (it->name == name) {
                    tensors.erase(it);
                    return;
                }
        });
    };
    return {
        {"no such folder", "missing", [](const std::string& folder) { std::filesystem::remove_all(folder); }, {"no such folder"}},
        {"a file where the folder should be", "file",
         [](const std::string& folder) {
             std::filesystem::remove_all(folder);
             write_file(folder, "not a folder");
         },
         {"is a file, not a checkpoint folder"}},

        // config.json
        {"no config.json", "no-config", without_file("config.json"), {"config.json: cannot open"}},
        {"config.json not JSON", "config-syntax", with_file("config.json", "{\"n_layer\": 2,"), {"config.json: line 1", "not valid JSON"}},
        {"config.json an array", "config-array", with_file("config.json", "[2, 2, 8]"),
         {"config.json: top level", "expected a JSON object", "found array"}},
        {"n_head missing", "no-heads", with_config("n_head", nullptr), {"config.json: key 'n_head': missing"}},
        {"n_head does not divide n_embd", "heads", with_config("n_head", 3), {"config.json: n_embd 8 is not divisible by n_head 3"}},
        {"a negative n_layer", "negative-layers", with_config("n_layer", -2),
         {"config.json: key 'n_layer'", "expected an integer from 1 to 1024", "found -2"}},
        {"an absurd vocab_size", "absurd-vocab", with_config("vocab_size", 1000000000),
         {"config.json: key 'vocab_size'", "found 1000000000"}},
        {"a fractional n_embd", "fractional", with_config("n_embd", 8.5), {"config.json: key 'n_embd'", "found 8.5"}},
        {"a string where a number belongs", "string-size", with_config("n_embd", "eight"),
         {"config.json: key 'n_embd'", "found \"eight\""}},
        {"an unsupported activation", "activation", with_config("activation_function", "mish"),
         {"config.json: key 'activation_function'", "\"mish\" is not supported", "gelu_new"}},
        {"another model type", "model-type", with_config("model_type", "gpt_neo"),
         {"config.json: key 'model_type'", "\"gpt_neo\" is not supported; supported: \"gpt2\""}},
        {"a model_type that is not a string", "model-type-number", with_config("model_type", 5),
         {"config.json: key 'model_type': found 5; expected one of \"gpt2\""}},
        {"a layer_norm_epsilon float32 rounds to 0", "epsilon-underflow", with_config("layer_norm_epsilon", 1e-300),
         {"config.json: key 'layer_norm_epsilon'", "too small for float32"}},
        {"attention scaled by the layer index", "inverse-layer", with_config("scale_attn_by_inverse_layer_idx", true),
         {"config.json: key 'scale_attn_by_inverse_layer_idx'", "not supported"}},
        {"a negative layer_norm_epsilon", "epsilon", with_config("layer_norm_epsilon", -1e-5),
         {"config.json: key 'layer_norm_epsilon'", "between 0.0 and 1.0", "found -1e-05"}},

        // vocab.json and merges.txt
        {"no vocab.json", "no-vocab", without_file("vocab.json"), {"vocab.json: cannot open"}},
        {"vocab.json not an object", "vocab-array", with_file("vocab.json", "[\"a\", \"b\"]"),
         {"vocab.json: expected an object of token → id"}},
        {"a vocabulary id beyond vocab_size", "vocab-id",
         [](const std::string& folder) {
             write_tiny_checkpoint(folder);
             std::string vocab = read_file(folder + "/vocab.json");
             vocab.pop_back();
             write_file(folder + "/vocab.json", vocab + ", \"extra\": 5000}");
         },
         {"vocab.json: key 'extra': id 5000 is not below vocab_size 260 (config.json)"}},
        {"no merges.txt", "no-merges", without_file("merges.txt"), {"merges.txt: cannot open"}},
        {"a bad merges line", "merges-line", with_file("merges.txt", "#version: 0.2\n\xC4\xA0 t\nh e x\n"),
         {"merges.txt: line 3: expected two tokens separated by one space", "\"h e x\""}},
        {"a merge of tokens not in the vocabulary", "merges-vocab", with_file("merges.txt", "#version: 0.2\nq z\n"),
         {"merges.txt: line 2: the merge result 'qz' is not in the vocabulary"}},

        // model.safetensors
        {"no model.safetensors", "no-weights", without_file("model.safetensors"),
         {"model.safetensors: missing, and there is no model.safetensors.index.json"}},
        {"pytorch_model.bin instead of safetensors", "pytorch",
         [](const std::string& folder) {
             without_file("model.safetensors")(folder);
             write_file(folder + "/pytorch_model.bin", "PK");
         },
         {"model.safetensors: missing", "pytorch_model.bin", "only safetensors are read"}},
        {"a shard index without its weight map", "sharded",
         [](const std::string& folder) {
             without_file("model.safetensors")(folder);
             write_file(folder + "/model.safetensors.index.json", "{}");
         },
         {"model.safetensors.index.json: key 'weight_map': missing or not an object of tensor name → shard file"}},
        {"model.safetensors not a safetensors file", "not-safetensors", with_file("model.safetensors", "hello, world! not tensors"),
         {"model.safetensors: the header length is", "not a safetensors file?"}},
        {"model.safetensors cut short", "cut-short",
         [](const std::string& folder) {
             write_tiny_checkpoint(folder);
             const std::string bytes = read_file(folder + "/model.safetensors");
             write_file(folder + "/model.safetensors", bytes.substr(0, bytes.size() - 100));
         },
         {"model.safetensors: tensor '", "run past the end of the data section"}},
        {"a missing tensor", "missing-tensor", drop("h.1.mlp.c_fc.bias"),
         {"tensor 'transformer.h.1.mlp.c_fc.bias' is missing (nor 'h.1.mlp.c_fc.bias')", "gpt2 with this config.json needs it, shape [32]"}},
        {"c_attn stored as nn.Linear's (out, in)", "transposed",
         [](const std::string& folder) {
             const gpt2::Checkpoint checkpoint = tiny_checkpoint();
             const Matrix transposed = gpt2::c_attn(checkpoint.layers[0]).transpose();
             with_tensors([&](std::vector<safetensors::NamedTensor>& tensors) {
                 for (auto& t : tensors)
                     if (t.name == "h.0.attn.c_attn.weight") t = safetensors::named_tensor(t.name, transposed);
             })(folder);
         },
         {"model.safetensors: tensor 'h.0.attn.c_attn.weight' is [24, 8]; expected [8, 24] for this config.json",
          "stored transposed", "Conv1D stores (in, out)"}},
        {"fewer layers than config.json says", "layers", with_config("n_layer", 3),
         {"layer 2 (counted from 0) is missing: no tensor 'transformer.h.2.…' nor 'h.2.…' is here, but config.json gives 3 layers"}},
        {"an embedding of another vocabulary size", "wte", with_config("vocab_size", 300),
         {"model.safetensors: tensor 'wte.weight' is [260, 8]; expected [300, 8] for this config.json"}},
        {"an integer tensor where a weight belongs", "dtype",
         [](const std::string& folder) {
             write_tiny_checkpoint(folder);
             // I32 has F32's size, so the header keeps its length and only the dtype is wrong.
             std::string bytes = read_file(folder + "/model.safetensors");
             const std::string f32 = "\"ln_f.bias\":{\"data_offsets\":";
             const auto at = bytes.find(f32);
             const auto dtype = bytes.find("\"F32\"", at);
             bytes.replace(dtype, 5, "\"I32\"");
             write_file(folder + "/model.safetensors", bytes);
         },
         {"model.safetensors: tensor 'ln_f.bias' is I32; only F32, F16 and BF16 are read"}},
        {"tensors on the same bytes", "overlap",
         with_header([](nlohmann::json& header) { header["h.1.ln_1.bias"]["data_offsets"] = header["h.1.ln_1.weight"]["data_offsets"]; }),
         {"model.safetensors: tensor 'h.1.ln_1.", "overlap tensor 'h.1.ln_1.", "each byte of the data section belongs to one tensor"}},
        {"a gap in the data section", "gap",
         with_header([](nlohmann::json& header) {
             // ln_f.bias (8 floats) keeps its place but shrinks to 4: its last 16 bytes belong to nobody.
             header["ln_f.bias"]["shape"] = {4};
             header["ln_f.bias"]["data_offsets"][1] = header["ln_f.bias"]["data_offsets"][0].get<std::uint64_t>() + 16;
         }),
         {"model.safetensors: bytes [", "belong to no tensor"}},
        {"a tensor named twice", "twice",
         [](const std::string& folder) {
             write_tiny_checkpoint(folder);
             std::string bytes = read_file(folder + "/model.safetensors");
             // A second, empty entry for wte.weight at the start of the header; its length grows to match.
             const std::string extra = "\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},";
             std::uint64_t length = 0;
             for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
             bytes.insert(9, extra);
             length += extra.size();
             for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(length >> (8 * i));
             write_file(folder + "/model.safetensors", bytes);
         },
         {"model.safetensors: the JSON header", "key 'wte.weight' appears twice in the same object"}},
        {"one weight under two names", "two-names",
         with_tensors([](std::vector<safetensors::NamedTensor>& tensors) {
             for (const auto& t : tensors)
                 if (t.name == "ln_f.bias") {
                     tensors.push_back({"transformer.ln_f.bias", t.shape, t.values});
                     return;
                 }
         }),
         {"tensor 'transformer.ln_f.bias' is stored under 2 names ('transformer.ln_f.bias', 'ln_f.bias')",
          "which one transformers would load is not defined"}},
        {"more layers than config.json says", "extra-layer", with_config("n_layer", 1),
         {"model.safetensors: tensors 'h.1.…' belong to layer 1 (counted from 0), but config.json gives 1 layer",
          "refused rather than ignored"}},
        {"a tensor GPT-2 does not have", "extra-tensor",
         with_tensors([](std::vector<safetensors::NamedTensor>& tensors) {
             tensors.push_back({"h.0.attn.rotary_emb.inv_freq", {4}, tensors.front().values});
         }),
         {"model.safetensors: tensor 'h.0.attn.rotary_emb.inv_freq' is not one of a gpt2 checkpoint's (with this config.json)",
          "refused rather than ignored"}},
        {"a tensor whose number is past any layer index", "huge-index",
         with_tensors([](std::vector<safetensors::NamedTensor>& tensors) {
             tensors.push_back({"h.99999999999.mlp.extra", {4}, tensors.front().values});
         }),
         {"model.safetensors: tensor 'h.99999999999.mlp.extra' is not one of a gpt2 checkpoint's (with this config.json)"}},
        {"weights larger than memory", "larger-than-memory", write_larger_than_memory,
         {": its weights need 1", "GiB of memory, but only", "is available"}},
        {"deeply nested config.json", "config-nested", with_file("config.json", std::string(100000, '[')),
         {"config.json: line 1, column 9", "nested deeper than 8 levels", "; a config file nests at most 8"}},
        {"a key twice in config.json", "config-twice", with_file("config.json", "{\"n_layer\": 2, \"n_layer\": 3}"),
         {"config.json: line 1", "key 'n_layer' appears twice"}},
        {"config.json a FIFO", "config-fifo", as_fifo("config.json"), {"config.json: is a FIFO (named pipe), not a config file"}},
        {"config.json a link to /dev/zero", "config-zero", as_link("config.json", "/dev/zero"),
         {"config.json: is a character device, not a config file"}},
        {"model.safetensors a FIFO", "weights-fifo", as_fifo("model.safetensors"),
         {"model.safetensors: is a FIFO (named pipe), not a safetensors file"}},
        {"vocab.json a link loop", "vocab-loop", as_link("vocab.json", ""), {"vocab.json: cannot open: too many levels of symbolic links"}},
        {"a vocabulary id far past its entries", "vocab-absurd-id",
         [](const std::string& folder) {
             write_tiny_checkpoint(folder);
             std::string vocab = read_file(folder + "/vocab.json");
             vocab.pop_back();
             write_file(folder + "/vocab.json", vocab + ", \"extra\": 16777215}");
             write_file(folder + "/config.json", "{}");   // no vocab_size to check it against
         },
         {"vocab.json: key 'extra': id 16777215 is not below the number of entries, 260"}},
        {"the folder a FIFO", "folder-fifo",
         [](const std::string& folder) {
             std::filesystem::remove_all(folder);
             ::mkfifo(folder.c_str(), 0600);
         },
         {"is a FIFO (named pipe), not a checkpoint folder"}},
        {"the folder a link loop", "folder-loop",
         [](const std::string& folder) {
             std::filesystem::remove_all(folder);
             std::filesystem::create_symlink(std::filesystem::path(folder).filename(), folder);
         },
         {"too many levels of symbolic links"}},
        {"not a GPT-2 model's tensors", "not-gpt2",
         [](const std::string& folder) {
             write_tiny_checkpoint(folder);
             const Matrix w = Matrix::Ones(2, 2);
             safetensors::write_safetensors(folder + "/model.safetensors", {safetensors::named_tensor("encoder.layer.0.weight", w)}, {},
                                     safetensors::Dtype::F32, nullptr);
         },
         {"none of gpt2's tensors is here (no 'transformer.wte.weight')", "the weights hold 1 tensor, such as 'encoder.layer.0.weight'",
          "not a gpt2 checkpoint?"}},
    };
}

}  // namespace attn::testing

#pragma once
// Reading a tokenizer.json's objects: every key either read or refused, every message naming
// the JSON path ("pre_tokenizer.pretokenizers[0].behavior") and the value. Internal to
// core/tokenizer; a fault throws Refusal, which TokenizerJson::from_text turns into a message.
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/pipeline.hpp"

namespace attn::tok {

// "'ByteLevel'", "null", "3": a JSON value as a message shows it (long ones cut).
std::string shown(const nlohmann::json& value);

[[noreturn]] void refuse(const std::string& where, const std::string& what);

class Object {
public:
    // Refuses a value that is not an object.
    Object(const nlohmann::json& value, std::string where);
    const std::string& where() const { return where_; }
    std::string at(const std::string& key) const { return where_.empty() ? key : where_ + "." + key; }

    // Refuses any key not in known, naming the keys this reader knows.
    void only(std::initializer_list<const char*> known) const;
    bool has(const char* key) const { return value_.contains(key); }
    // The member, or nullptr when absent. null counts as present.
    const nlohmann::json* find(const char* key) const;
    const nlohmann::json& required(const char* key) const;

    std::string string(const char* key) const;
    // Absent or null → nullopt.
    std::optional<std::string> optional_string(const char* key) const;
    bool boolean(const char* key, bool fallback) const;
    std::optional<bool> optional_boolean(const char* key) const;
    long long integer(const char* key, long long fallback, long long min, long long max) const;

private:
    const nlohmann::json& value_;
    std::string where_;
};

// The component a "type" names, or refused: "where.type: 'X' is not supported (supported: …)".
std::string type_of(const Object& object, std::initializer_list<const char*> supported);

// A Split's or a Replace's pattern: {"String": s} or {"Regex": r}.
Regex read_pattern(const nlohmann::json& value, const std::string& where);

std::vector<std::unique_ptr<Normalizer>> read_normalizer(const nlohmann::json& value, const std::string& where);
std::vector<std::unique_ptr<PreTokenizer>> read_pre_tokenizer(const nlohmann::json& value, const std::string& where,
                                                              std::string& metaspace, bool& byte_level);
std::vector<std::unique_ptr<PostProcessor>> read_post_processor(const nlohmann::json& value, const std::string& where,
                                                                const Pipeline& pipeline);
// The model; fills pipeline.tokens and pipeline.ids from its vocabulary.
std::unique_ptr<Model> read_model(const nlohmann::json& value, const std::string& where, Pipeline& pipeline);

}  // namespace attn::tok

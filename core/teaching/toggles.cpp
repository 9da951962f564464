#include "teaching/toggles.hpp"

#include <cmath>

#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "attention/serialize.hpp"

namespace attn {

bool Toggles::empty() const {
    return !preset && !mask && !window && !heads && !positional && !softmax && !scale && !masked_fill && !seed && !text &&
           !source_text && !attention && !block && !hidden_rows;
}

bool apply(const Toggles& t, Scenario& scenario, std::string* error) {
    Scenario s = scenario;
    auto fail = [&](const std::string& message) {
        if (error) *error = message;
        return false;
    };
    if (t.preset) {
        const Preset* p = find_preset(*t.preset);
        if (!p) return fail("unknown preset \"" + *t.preset + "\" (attnlab --list-presets)");
        s = p->scenario;
    }
    if (t.mask) s.mask = *t.mask;
    if (t.window) s.window = *t.window;
    if (t.heads) s.heads = *t.heads;
    if (t.positional) s.positional = *t.positional;
    if (t.softmax) s.softmax = *t.softmax;
    if (t.scale) s.scale = *t.scale;
    if (t.masked_fill) {
        if (std::isnan(*t.masked_fill)) return fail("masked fill is NaN: expected -inf or a number such as -1e9");
        s.masked_fill = *t.masked_fill;
    }
    if (t.seed) s.seed = *t.seed;
    if (t.attention) s.attention = *t.attention;
    if (t.text || t.source_text) {
        if (s.input == InputMode::Direct) return fail("this scenario gives Q, K, V directly and has no tokens to replace");
        if (t.text) {
            s.target.tokens = tokenize(*t.text);
            s.target.embeddings.resize(0, 0);
            s.target.padding.clear();
        }
        if (t.source_text) {
            s.source.tokens = tokenize(*t.source_text);
            s.source.embeddings.resize(0, 0);
            s.source.padding.clear();
        }
        if (s.mask == MaskKind::Custom) s.custom_mask.resize(0, 0);
    }
    if (t.block) s.block.residual = s.block.layer_norm = s.block.feed_forward = *t.block;
    if (s.attention == AttentionKind::Cross && s.input == InputMode::Embeddings && s.source.tokens.empty() &&
        s.source.embeddings.size() == 0)
        s.source = s.target;  // cross-attention needs a source: start from a copy of the target
    if (s.mask == MaskKind::Custom && s.custom_mask.size() == 0) {
        // A custom mask with no cell painted yet starts from everything visible.
        Scenario shape = s;
        shape.mask = MaskKind::None;
        const Trace probe = run(shape, RunOptions{Detail::OutputOnly, false});
        if (probe.ok) s.custom_mask = MaskMatrix::Constant(probe.n_queries, probe.n_keys, true);
    }
    if (t.hidden_rows) {
        if (s.mask != MaskKind::Custom) return fail("'hidden_rows' needs \"mask\": \"custom\"");
        for (int row : *t.hidden_rows) {
            if (row < 1 || row > s.custom_mask.rows())
                return fail("'hidden_rows': row " + std::to_string(row) + " is outside 1.." + std::to_string(s.custom_mask.rows()));
            s.custom_mask.row(row - 1).setConstant(false);
        }
    }
    scenario = std::move(s);
    return true;
}

namespace {

template <typename Enum>
void read_choice(const nlohmann::json& j, const char* key, std::optional<Enum>& out,
                 std::optional<Enum> (*parse)(const std::string&), const std::string& where,
                 std::vector<std::string>& errors) {
    if (!j.contains(key)) return;
    if (j[key].is_string())
        if (auto v = parse(j[key].get<std::string>())) {
            out = v;
            return;
        }
    errors.push_back(where + "'" + key + "': unknown value " + dump_json(j[key]));
}

}  // namespace

Toggles toggles_from_json(const nlohmann::json& j, const std::string& where, std::vector<std::string>& errors) {
    Toggles t;
    if (!j.is_object()) {
        errors.push_back(where + "expected an object of toggles");
        return t;
    }
    static const char* known[] = {"preset", "mask", "window", "heads", "positional_encoding", "softmax", "scale", "masked_fill",
                                  "seed", "text", "source_text", "attention", "block", "hidden_rows"};
    for (auto it = j.begin(); it != j.end(); ++it) {
        bool ok = false;
        for (const char* k : known) ok = ok || it.key() == k;
        if (!ok) errors.push_back(where + "'" + it.key() + "': unknown toggle");
    }
    if (j.contains("preset")) {
        if (!j["preset"].is_string() || !find_preset(j["preset"].get<std::string>()))
            errors.push_back(where + "'preset': unknown preset " + dump_json(j["preset"]) + " (attnlab --list-presets)");
        else
            t.preset = j["preset"].get<std::string>();
    }
    read_choice(j, "mask", t.mask, mask_from_string, where, errors);
    read_choice(j, "positional_encoding", t.positional, positional_from_string, where, errors);
    read_choice(j, "softmax", t.softmax, softmax_from_string, where, errors);
    read_choice(j, "attention", t.attention, attention_from_string, where, errors);
    auto integer = [&](const char* key, long long lo, long long hi) -> std::optional<long long> {
        if (!j.contains(key)) return std::nullopt;
        if (j[key].is_number_integer() && j[key].get<long long>() >= lo && j[key].get<long long>() <= hi)
            return j[key].get<long long>();
        errors.push_back(where + "'" + key + "': expected an integer from " + std::to_string(lo) + " to " +
                         std::to_string(hi) + ", found " + dump_json(j[key]));
        return std::nullopt;
    };
    if (auto v = integer("window", 1, 1 << 30)) t.window = static_cast<int>(*v);
    if (auto v = integer("heads", 1, 1024)) t.heads = static_cast<int>(*v);
    if (auto v = integer("seed", 0, (1LL << 62))) t.seed = static_cast<std::uint64_t>(*v);
    for (const char* key : {"scale", "block"}) {
        if (!j.contains(key)) continue;
        if (!j[key].is_boolean()) errors.push_back(where + "'" + key + "': expected true or false");
        else (std::string(key) == "scale" ? t.scale : t.block) = j[key].get<bool>();
    }
    if (j.contains("masked_fill")) {
        const auto& f = j["masked_fill"];
        if (f.is_number()) t.masked_fill = f.get<float>();
        else if (f == "-inf") t.masked_fill = -INFINITY;
        else errors.push_back(where + "'masked_fill': expected \"-inf\" or a number");
    }
    if (j.contains("hidden_rows")) {
        const auto& rows = j["hidden_rows"];
        bool ok = rows.is_array() && !rows.empty();
        std::vector<int> list;
        for (const auto& r : rows) {
            if (!ok) break;
            ok = r.is_number_integer() && r.get<long long>() >= 1 && r.get<long long>() <= (1 << 30);
            if (ok) list.push_back(r.get<int>());
        }
        if (ok) t.hidden_rows = list;
        else errors.push_back(where + "'hidden_rows': expected a list of row numbers counted from 1, found " + dump_json(rows));
    }
    for (const char* key : {"text", "source_text"}) {
        if (!j.contains(key)) continue;
        if (!j[key].is_string()) errors.push_back(where + "'" + key + "': expected a string");
        else (std::string(key) == "text" ? t.text : t.source_text) = j[key].get<std::string>();
    }
    return t;
}

nlohmann::json toggles_to_json(const Toggles& t) {
    nlohmann::json j = nlohmann::json::object();
    if (t.preset) j["preset"] = *t.preset;
    if (t.mask) j["mask"] = to_string(*t.mask);
    if (t.window) j["window"] = *t.window;
    if (t.heads) j["heads"] = *t.heads;
    if (t.positional) j["positional_encoding"] = to_string(*t.positional);
    if (t.softmax) j["softmax"] = to_string(*t.softmax);
    if (t.scale) j["scale"] = *t.scale;
    if (t.masked_fill) j["masked_fill"] = std::isinf(*t.masked_fill) ? nlohmann::json("-inf") : nlohmann::json(*t.masked_fill);
    if (t.seed) j["seed"] = *t.seed;
    if (t.text) j["text"] = *t.text;
    if (t.source_text) j["source_text"] = *t.source_text;
    if (t.attention) j["attention"] = to_string(*t.attention);
    if (t.block) j["block"] = *t.block;
    if (t.hidden_rows) j["hidden_rows"] = *t.hidden_rows;
    return j;
}

}  // namespace attn

// Open model…'s popup below the path field: the checkpoints in the Hugging Face cache, each a
// click to open, and a download of a model named org/name, verified, with its progress.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <imgui.h>

#include "ui/classroom.hpp"
#include "ui/panel_model.hpp"
#include "ui/panels.hpp"

namespace attn::ui {

namespace {

// The model families that open, as config.json's model_type names them: a family's own, or that of
// a multimodal folder whose text model it is (Qwen3.5's "qwen3_5").
bool family_opens(const std::string& model_type) {
    return hf::find_family(model_type) != nullptr || hf::find_multimodal(model_type) != nullptr;
}

std::string megabytes(std::uintmax_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f MB", static_cast<double>(bytes) / 1e6);
    return text;
}

// org/name, with @revision unless it is main.
std::string with_revision(const hf::RepoId& repo) { return repo.revision == "main" ? repo.id : repo.id + "@" + repo.revision; }

}  // namespace

// Under Open model…'s path: the models of the Hugging Face cache that open here, each a click
// from the path field, and how many others there are (a family not read yet).
// True when one was double-clicked (opened at once).
bool draw_cached_models(PanelContext state, ModelViewState& m, std::string& path) {
    bool chosen = false;
    if (std::optional<std::vector<hf::CachedModel>> found = m.scanning.take()) m.cached = std::move(*found);
    const std::string cache = hf::hub_cache_folder();
    if (!m.cached) {
        ImGui::TextDisabled("Looking in the Hugging Face cache (%s)\xE2\x80\xA6", cache.c_str());
        return false;
    }
    std::vector<std::string> others;
    int listed = 0;
    for (const hf::CachedModel& model : *m.cached) {
        if (!family_opens(model.model_type)) {
            others.push_back(model.model_type.empty() ? "no config.json" : model.model_type);
            continue;
        }
        if (listed++ == 0) ImGui::TextDisabled("In the Hugging Face cache (%s):", cache.c_str());
        const std::string line = model.id + "   " + model.model_type + " \xC2\xB7 " + megabytes(model.bytes);
        if (ImGui::Selectable(line.c_str(), path == model.id, ImGuiSelectableFlags_AllowDoubleClick | ImGuiSelectableFlags_DontClosePopups)) {
            path = model.id;
            if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) chosen = true;  // a double click opens it
        }
        record_item(state, ("prompt.cached." + std::to_string(listed)).c_str(), model.id);
    }
    if (listed == 0) ImGui::TextDisabled("No model that opens here is in the Hugging Face cache (%s).", cache.c_str());
    if (!others.empty()) {
        std::sort(others.begin(), others.end());
        others.erase(std::unique(others.begin(), others.end()), others.end());
        std::string families;
        for (const std::string& f : others) families += (families.empty() ? "" : ", ") + f;
        ImGui::TextDisabled("(and %zu of families not read yet: %s)", m.cached->size() - static_cast<size_t>(listed), families.c_str());
        record_item(state, "prompt.cached.others", families);
    }
    return chosen;
}

// How a download ended, as a notice (and, while the popup shows it, under its button); true
// when the model is in the cache now.
bool say_download(PanelContext state, ModelViewState& m, const hf::RepoId& repo, const hf::DownloadResult& r) {
    if (r.ok) {
        m.download_said = "Downloaded " + repo.id + ": " + std::to_string(r.files.size()) + " files (" + megabytes(r.bytes_fetched) +
                          " fetched) into " + r.folder;
        m.download_failed = false;
    } else if (r.cancelled) {
        m.download_said = "The download of " + repo.id + " was cancelled: what was fetched stays in the cache, and the next download resumes it";
        m.download_failed = false;
    } else {
        m.download_said = "Cannot download " + repo.id + ": " + r.error;
        m.download_failed = true;
    }
    add_notice(state, m.download_said, m.download_failed, "download a model");
    return r.ok;
}

// Under the cached models: a model named by its id and not in the cache can be downloaded
// from the hub (HF_ENDPOINT, a gated one with HF_TOKEN) into the cache; while it downloads,
// its progress and Cancel. True when a download has just ended with the model in the cache
// (`path` names it: the popup opens it).
bool draw_download(PanelContext state, ModelViewState& m, std::string& path) {
    m.in_popup = true;
    if (m.download) {
        if (m.download->done()) {
            const hf::RepoId repo = m.download->repo();
            const hf::DownloadResult r = m.download->take();
            m.download.reset();
            if (!say_download(state, m, repo, r)) return false;
            path = with_revision(repo);
            return true;
        }
        const hf::DownloadProgress p = m.download->progress();
        ImGui::TextUnformatted(("Downloading " + m.download->repo().id + " from " + hf::hub_endpoint() + "\xE2\x80\xA6").c_str());
        const float fraction = p.total > 0 ? static_cast<float>(static_cast<double>(p.done) / static_cast<double>(p.total)) : 0.0f;
        const std::string overlay = (p.file.empty() ? std::string("asking the hub for its files") : p.file) + "   " + megabytes(p.done) +
                                    " of " + (p.total > 0 ? megabytes(p.total) : std::string("?"));
        ImGui::ProgressBar(fraction, ImVec2(-1.0f, 0.0f), overlay.c_str());
        record_item(state, "prompt.download.progress", overlay);
        if (ImGui::Button(m.download->cancelling() ? "Cancelling\xE2\x80\xA6" : "Cancel the download")) m.download->cancel();
        record_item(state, "prompt.download.cancel", "Cancel the download");
        return false;
    }
    if (!m.download_said.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, m.download_failed ? IM_COL32(255, 110, 100, 255) : IM_COL32(150, 220, 150, 255));
        ImGui::TextWrapped("%s", m.download_said.c_str());
        ImGui::PopStyleColor();
    }
    const std::optional<hf::RepoId> repo = hf::parse_repo_id(path);
    std::error_code ec;
    if (!repo || std::filesystem::exists(path, ec) || !hf::find_in_cache(*repo).folder.empty()) return false;
    const std::string label = "Download " + with_revision(*repo) + " from the Hugging Face hub";
    if (ImGui::Button(label.c_str())) {
        m.download_said.clear();
        m.download = std::make_unique<compute::DownloadJob>(*repo, hf::DownloadOptions{});
    }
    record_item(state, "prompt.download", label);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("From %s into the Hugging Face cache (%s): config.json, the tokenizer's files and the safetensors "
                          "weights. A gated model needs a token in HF_TOKEN; an interrupted download resumes.",
                          hf::hub_endpoint().c_str(), hf::hub_cache_folder().c_str());
    return false;
}

}  // namespace attn::ui

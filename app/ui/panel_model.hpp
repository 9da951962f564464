#pragma once
// The model view (panel_model.cpp): a checkpoint's layers × heads (GPT-2 or a Hugging Face
// family), its sentence and prediction, and the layer opened in the pipeline.
#include <string>
#include <vector>

#include "options.hpp"
#include "session_file.hpp"
#include "ui/context.hpp"
#include "ui/heatmap.hpp"
#include "ui/menus.hpp"
#include "ui/model_state.hpp"
#include "ui/view.hpp"

namespace attn::ui {

// Every model is opened as a job (compute::open_model_folder) off the window's thread: the
// folder read and the sentence run (the articles' animal sentence at first). update_model_view
// installs the model when it lands, or says fault by fault why it could not open; the model and
// the work on screen stay as they are until then. One opening at a time: another is refused.
//
// File → Open model….
void open_model_job(PanelContext state, ModelViewState& model, const std::string& folder);
// attnlab --model DIR [--text …] [--layer L --head H]: the model opened, then that layer in the
// pipeline. Nothing without --model.
void start_model(PanelContext state, ModelViewState& model, const cli::Options& options);
// Whether the model view has work under way off the window's thread (a job, a model being
// opened, Compare's sentence B), and waiting for all of it (screenshots, tests).
bool model_work_under_way(const ModelViewState& model);
void finish_model_work(ModelViewState& model);
// The session's scenario becomes layer `layer`'s (its input the stream entering it), head
// `head` shown (both from 0).
void open_model_layer(MapContext state, ModelViewState& model, int layer, int head);
// Before drawing: a new sentence runs; an edit of the opened layer's scenario recomputes it
// and the layers after it.
void update_model_view(MapContext state, ModelViewState& model);
// The model view: the sentence, the top 5, the ablated heads, and its tabs (the layers ×
// heads grid, Compare). Heatmap cards wider than kTextureCells draw through `textures`.
void draw_model_view(MapContext state, ModelViewState& model, HeatmapTextures& textures);
void offer_model(MapContext state, ModelViewState& model, Offers& offers);  // View → Model view
// In place of the token bar while a model's layer is in the pipeline: which layer, the
// sentence, and where to change it.
void draw_model_sentence(MapContext state, ModelViewState& model);
// While the model view is in front: the side bar's model controls (sentence, layer and head
// to open, heads ablated) and, in place of the token bar, the model and its sentence.
void draw_model_sidebar(PanelContext state, ModelViewState& model);
void draw_model_bar(PanelContext state, const ModelViewState& model);
// What X of the model's layer in the pipeline is, for its cells' tooltips; empty: none open.
std::string model_layer_input(const ModelViewState& model);
// The open checkpoint for a session file (its folder made absolute), and the checkpoint from
// one: opened again from its folder (a folder that is gone: a notice, nothing else changes),
// the layer `scenario_name` opened reattached so that its edits recompute the layers after it.
// The articles' sentences: the presets whose title is a quoted sentence.
std::vector<std::string> article_sentences();
// The model's shape and what its attention does, for the model view's title line: "30 layers ×
// 9 heads on 3 K/V heads (grouped-query attention: …), head_dim 64, …; RoPE, RMSNorm, gated MLP".
std::string model_shape_text(const lm::Model& model);

// Open model…'s popup under the path field (panel_model_open.cpp): the cached models, each a
// click from the path (true: one double-clicked, open it), and a download of org/name (true: it
// has just landed in the cache, `path` names it). say_download says how a download ended (true:
// the model is in the cache).
bool draw_cached_models(PanelContext state, ModelViewState& model, std::string& path);
bool draw_download(PanelContext state, ModelViewState& model, std::string& path);
bool say_download(PanelContext state, ModelViewState& model, const hf::RepoId& repo, const hf::DownloadResult& result);

// The Layers × heads tab (panel_model_grid.cpp): every layer × head's weights as a small map.
void draw_grid(PanelContext state, ModelViewState& model);

// The Compare tab (panel_model_compare.cpp). Before drawing, while the tab is shown: sentence
// B run, and the comparison made again when a pass or a choice changed.
void update_model_compare(ModelViewState& model);
void draw_model_compare(MapContext state, ModelViewState& model, HeatmapTextures& textures);
// Two models: model B opened from `folder` (a checkpoint folder or a cached model's name) as a
// job, the model view's sentence run on it; said under the box when it lands.
void open_compare_model(ModelViewState& model, const std::string& folder);
// B's first sentence for A: the article sentence the articles pair with it (the other "bank"
// sentence, "man bites dog" for "dog bites man"), the animal sentence's twin "… it was wide",
// else A itself.
std::string partner_sentence(const std::string& a);

// What each head does (panel_model_heads.cpp): the Head roles, Logit lens and Ablation sweep
// tabs. Before drawing: what their jobs finished is taken, and the lens follows the pass while
// its tab is shown. Their jobs are waited for with the model view's (finish_model_work) and
// dropped, with what they found, before the model changes (forget_model_heads).
void update_model_heads(ModelViewState& model);
bool model_heads_busy(const ModelViewState& model);
void finish_model_heads(ModelViewState& model);
void forget_model_heads(ModelViewState& model);
// Scores every head on the probe (the tab's block length and seed) as a job; the sweep over
// every head for the tab's token.
void score_head_roles(ModelViewState& model);
void run_ablation_sweep(ModelViewState& model);
void draw_head_roles(PanelContext state, ModelViewState& model);
void draw_logit_lens(PanelContext state, ModelViewState& model);
void draw_ablation_sweep(PanelContext state, ModelViewState& model);
// The Routing tab (panel_model_routing.cpp), shown when a layer of the pass routes its tokens
// to experts: one mixture layer's router probabilities beside the weights each token kept.
std::vector<int> mixture_layers(const ModelPass& pass);   // the layers (from 0) with a mixture of experts
void draw_model_routing(MapContext state, ModelViewState& model, HeatmapTextures& textures);
// The grid's part: head (ℓ, h)'s strongest role above the threshold while badges are on, its
// badge drawn at a map's corner, and its scores as a line of the map's tooltip (empty when
// the heads are not scored).
std::optional<interpret::Role> head_role_badge(const ModelViewState& model, stack::HeadId head);
void draw_role_badge(PanelContext state, ImVec2 corner, interpret::Role role);
std::string head_roles_line(const ModelViewState& model, stack::HeadId head);

// Writing (panel_model_write.cpp): the Write control beside the sentence and the Write tab.
// Before drawing: the step that finished is taken (its token joins the text), the caches are
// filled from a pass that holds the whole text (again from the layer an edit or an ablation
// changed), the next step starts, and once writing stops a pass of the whole text is run.
void update_model_write(ModelViewState& model);
void draw_write_control(PanelContext state, ModelViewState& model);
void draw_write_tab(PanelContext state, ModelViewState& model);
bool model_write_busy(const ModelViewState& model);
void finish_model_write(ModelViewState& model);
// The written tokens dropped (a new sentence), and everything of writing (another model).
void forget_written(ModelViewState& model);
void forget_model_write(ModelViewState& model);
// True while a step runs or the text holds tokens the pass on screen does not: edits and
// ablations wait for the pass of the whole text.
bool model_write_ahead(const ModelViewState& model);
// The text: the sentence's ids and the written ones; how many written tokens the pass on
// screen does not hold yet; token i of the text as the strip shows it; and a written token's
// weight on key j in a head's row as it was written (none where the key is hidden from it).
std::vector<int> written_text_ids(const ModelViewState& model);
// The sentence with the written tokens' text after it: what a session keeps and Make it the
// sentence types (tokenised again, it may split differently from the ids written).
std::string written_sentence(const ModelViewState& model);
int written_beyond_pass(const ModelViewState& model);
std::string text_token(const ModelViewState& model, int i);
std::optional<float> written_weight(const ModelViewState& model, int layer, int head, int i, int j);
// The text as ids run whole as a job (panel_model.cpp), an edited layer open in the pipeline
// carried to it (compute::edit_for_text).
void submit_written_text(ModelViewState& model, std::vector<int> ids);

std::optional<session_file::ModelChoice> model_choice(const ModelViewState& model);
// A session's model: opened with its sentence and heads ablated, then its layer (the session's
// scenario `scenario_name`, edited) and `pane`, the tab the session showed.
void restore_model(PanelContext state, ModelViewState& model, const session_file::ModelChoice& choice, const std::string& scenario_name,
                   std::optional<Pane> pane);

// The model view as the window holds it: File → Open model… (a folder or a cached model),
// View → Model view, the model's work before each frame, and its part of a session.
class ModelView final : public View {
public:
    ModelViewState state;
    // attnlab --model (start_model), and the heads and Compare the test hooks ask for.
    void start(MapContext shared, const cli::Options& options, const TestHooks& hooks) override;
    void offer(MapContext shared, Offers& offers) override;
    void update(MapContext shared, HeatmapTextures& textures) override;
    bool busy() const override;
    void finish_work() override;
    void keep(session_file::ViewChoices&, session_file::Attachments& attached) const override { attached.model = model_choice(state); }
    void sign(std::string& signature) const override;
    void reopen(MapContext shared, const session_file::SessionLoad& load, const std::string& scenario_name) override;
};

}  // namespace attn::ui

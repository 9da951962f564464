#pragma once
// One matrix drawn as a heatmap card: title, shape, token labels on rows and columns,
// coloured cells (numbers inside when they fit), masked cells hatched, a legend, the
// hover tooltip with the cell's arithmetic, zoom/pan, and in-place editing.
// Big matrices (more than kTextureCells cells) are drawn as one GL texture.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "attention/analysis.hpp"
#include "edits.hpp"
#include "attention/trace.hpp"
#include "ui/colormap.hpp"
#include "ui/texture.hpp"
#include "ui/widgets.hpp"

struct ImVec2;

namespace attn::ui {

constexpr int kTextureCells = 32 * 32;
// How many pixels taller than its row or wider than its column a token's label may be: a
// line's leading is blank, so labels of a 12 px font still read on 10 px rows.
constexpr float kLabelSqueeze = 2.0f;

struct HeatmapSpec {
    std::string name;   // trace matrix name ("head0.weights"): tooltip, zoom state, layout record
    std::string title;  // "softmax(…) = weights"
    std::string shape;  // "(3×2)·(2×3) → 3×3"
    const Matrix* values = nullptr;
    // Nonzero: names the values' content (a shared weight's version, weight_version): its
    // texture is kept while it is the same, whatever the trace's generation.
    std::uint64_t content_version = 0;
    ColorScale scale = ColorScale::Diverging;
    Axis row_axis = Axis::Query, col_axis = Axis::Dim;
    const std::vector<std::string>* row_tokens = nullptr;  // labels of a Query/Key axis
    const std::vector<std::string>* col_tokens = nullptr;
    int col_index_offset = 0;          // a Dim axis labels columns from here (a head's slice)
    const MaskMatrix* mask = nullptr;  // false cells are drawn masked
    float masked_value = -std::numeric_limits<float>::infinity();  // written in masked cells
    bool show_masked_value = true;     // false: masked cells show their own value (weights)
    bool editable = false;             // drag to scrub, double-click to type
    edits::MatrixId edit_target = edits::MatrixId::X;
    int edit_col_offset = 0;           // scenario column of the card's column 0
    bool paints_mask = false;          // click/drag paints the custom mask
    int band_begin = -1, band_end = -1;  // columns outlined: the shown head's slice of a W
    const std::vector<std::pair<int, int>>* outlined = nullptr;  // cells (row, column) outlined in white
    bool compact = false;              // one small title line, no shape line: a repeated head
    bool row_labels = true;            // false: a head beside the first, whose row labels it shares
    // Output-only weights: values are these max-pooled bins; row/column i is a bin of token
    // indices (labels "a–b", tooltip with the range), not one token.
    const PooledWeights* pooled = nullptr;
    // The tooltip explains `matrix` of `trace` (unset: the session's trace and `name`). A
    // difference card (Compare's B − A) shows its two operands instead.
    const Trace* trace = nullptr;
    std::string matrix;
    const Matrix* diff_a = nullptr;
    const Matrix* diff_b = nullptr;
    // The smallest half-range of a diverging legend: values below it are drawn near the
    // middle colour (Compare's B − A: float rounding is no difference).
    float legend_floor = 0.0f;
};

// Where the parts of a card go, for one cell size.
struct CardMetrics {
    float cell_w = 0, cell_h = 0;  // one cell in pixels (zoom 1); square unless a long axis was shrunk
    float title_h = 0;     // title and shape lines
    float header_h = 0;    // column labels
    float label_w = 0;     // row labels
    float grid_w = 0, grid_h = 0;
    float legend_h = 0;
    float width = 0, height = 0;
    bool rotated_columns = false;
};

// GL textures of the big heatmaps, rebuilt when the trace generation changes.
class HeatmapTextures {
public:
    // The texture for spec's values, made again if stale; null until it is whole: a frame
    // fills at most its share of texels, a band of rows at a time, and a map not yet whole
    // says it is being drawn (never shows an older picture). texels_per_cell is 4 when the
    // matrix has masked cells (room for the hatching), else 1.
    const Texture* get(const HeatmapSpec& spec, std::uint64_t generation, float limit, int& texels_per_cell);
    void clear() {
        entries_.clear();
        limits_.clear();
    }
    // Each frame fills at most this many texels (at least one band of rows): opening a GPT-2
    // layer (W_1 and W_2 are 2.4 million cells each) spreads over a few frames instead of
    // holding one for 200 ms. 0: no limit (a screenshot draws everything at once).
    static constexpr long long kTexelsPerFrame = 1 << 19;
    void begin_frame(long long budget = kTexelsPerFrame) {
        budget_ = budget;
        made_ = 0;
        deferred_ = false;
    }
    // A texture was put off this frame: draw another soon.
    bool deferred() const { return deferred_; }
    // legend_limit(spec), kept for a weight while its content is the same (spec.content_version).
    float limit(const HeatmapSpec& spec);

private:
    struct Entry {
        Texture texture;
        std::uint64_t generation = ~0ull;
        std::uint64_t content_version = 0;  // of the values it was made from (0: unknown)
        float limit = 0;
        int k = 0;
        int rows_done = 0, rows = -1;       // matrix rows (sampled) filled so far, of all
    };
    std::map<std::string, Entry> entries_;
    std::map<std::uint64_t, float> limits_;  // by content version
    std::vector<std::uint32_t> pixels_;
    long long budget_ = 0, made_ = 0;  // texels this frame may make, and has made
    bool deferred_ = false;
};

// The text extents of a card, which do not depend on the cell size: measured once per
// frame, then measure_card is plain arithmetic (the layout tries many cell sizes).
struct CardText {
    float row_labels = 0;  // widest row label
    float col_labels = 0;  // widest column label
    float title = 0;       // widest of title and shape line
};
CardText measure_text(const HeatmapSpec& spec, const UiFonts& fonts);
// cell_w × cell_h: the cell the pipeline layout gives this card (a long axis already shrunk).
CardMetrics measure_card(const HeatmapSpec& spec, const CardText& text, float cell_w, float cell_h, const UiFonts& fonts);
// What a card is given besides its spec, and where it reports: the fonts and number options
// it draws with, the trace its tooltips explain (unless the spec names its own) and that
// trace's NaN/∞ report, the state every card shares (last frame's hover, each map's zoom,
// the cell editor, the mask painter), and its outputs (the hover for the next frame, where
// it was drawn, the edits asked for). A card never sees the scenario or the session: its
// edits are returned in `edits`, and the caller decides what they apply to
// (cards.hpp: draw_card for the window pushes them into the session).
struct CardContext {
    const UiFonts& fonts;
    const ViewOptions& view;
    const Trace& trace;
    std::uint64_t generation;           // the trace's: a texture is made again when it changes
    const NonFiniteReport& non_finite;  // of `trace`
    const HoverState& hover;            // last frame's
    HoverState& hover_next;
    std::map<std::string, HeatmapView>& views;  // zoom and pan, by card name
    CellEditor& editor;
    MaskPainter& painter;
    HeatmapTextures& textures;
    std::vector<HeatmapLayout>& layout_next;
    std::vector<edits::Edit> edits;     // SetCell (scrubbing, typing) and PaintMaskCell, in order
};
// Draws the card with its top-left corner at the cursor's screen position (the caller
// places cards and reserves their space).
void draw_card(const HeatmapSpec& spec, const CardMetrics& metrics, CardContext& context);

// A cell's number with `decimals`, the most the view allows being `most`. Fewer decimals
// than `most` (to fit a narrow cell) never turn a number the view writes plainly into
// scientific notation: 0.04 stays "0.04" where one decimal would give "4e−2".
std::string cell_text(float value, int decimals, int most);

// The half-range of a diverging legend: the largest finite |value| outside masked cells, at
// least spec.legend_floor (1 when every value is 0).
float legend_limit(const HeatmapSpec& spec);

}  // namespace attn::ui

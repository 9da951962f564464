// Weights read where their checkpoint stores them (core/tensor/stored_matrix.hpp): every layout a
// loader makes (a whole tensor, its transpose, GPT-2's c_attn thirds, GPT-NeoX's fused rows)
// in every dtype reads as its float32 widening; products read from the stored bytes give what
// the float32 matrix gives; and a pass of every family, GPT-2 included, widens no weight:
// a BF16 checkpoint stays BF16 in memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "bad_model_catalogue.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "hf_family_fixtures.hpp"
#include "model/hf/model.hpp"
#include "attention/analysis.hpp"
#include "model/language_model.hpp"
#include "attention/serialize.hpp"
#include "tensor/product.hpp"
#include "tensor/shared_matrix.hpp"
#include "tensor/stored_matrix.hpp"

using namespace attn;
using namespace attn::testing::families;
using attn::testing::tiny_checkpoint;
using attn::testing::write_tiny_checkpoint;
using attn::safetensors::Dtype;

namespace {

// [SECTION] Stored bytes made here

// A (rows × cols) tensor's bytes in a dtype, `shift` bytes into its buffer (1: no float's
// alignment), with the float32 values they hold.
struct Bytes {
    std::shared_ptr<std::vector<unsigned char>> buffer;
    const unsigned char* first = nullptr;
    Matrix values;  // as stored, widened
};

Bytes stored_bytes(Eigen::Index rows, Eigen::Index cols, Dtype dtype, std::uint64_t seed, std::size_t shift = 0) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Bytes b;
    b.values.resize(rows, cols);
    const std::size_t size = safetensors::dtype_size(dtype);
    b.buffer = std::make_shared<std::vector<unsigned char>>(shift + static_cast<std::size_t>(rows * cols) * size);
    unsigned char* out = b.buffer->data() + shift;
    for (Eigen::Index i = 0; i < rows * cols; ++i) {
        const float v = normal(rng);
        if (dtype == Dtype::F32) std::memcpy(out + 4 * i, &v, 4);
        else {
            const std::uint16_t h = dtype == Dtype::BF16 ? safetensors::f32_to_bf16(v) : safetensors::f32_to_f16(v);
            out[2 * i] = static_cast<unsigned char>(h & 0xff);
            out[2 * i + 1] = static_cast<unsigned char>(h >> 8);
        }
        safetensors::convert_to_f32(out + size * static_cast<std::size_t>(i), dtype, 1, b.values.data() + i);
    }
    b.first = out;
    return b;
}

StoredMatrix whole(const Bytes& b, Dtype dtype) {
    return StoredMatrix::as_stored(b.buffer, b.first, dtype, b.values.rows(), b.values.cols());
}

// Each layout a loader makes, and the float32 matrix it must read as.
struct Layout {
    const char* name;
    StoredMatrix stored;
    Matrix expected;
};

std::vector<Layout> layouts(Dtype dtype, std::size_t shift) {
    std::vector<Layout> out;
    const Bytes table = stored_bytes(37, 20, dtype, 1, shift);  // an embedding (V × d), used as stored
    out.push_back({"a table as stored", whole(table, dtype), table.values});
    out.push_back({"a table's transpose (a tied head's Eᵀ)", whole(table, dtype).transpose(), table.values.transpose()});
    const Bytes linear = stored_bytes(300, 70, dtype, 2, shift);  // nn.Linear (out × in), used as (in × out)
    out.push_back({"nn.Linear used as its transpose", whole(linear, dtype).transpose(), linear.values.transpose()});
    const Bytes wide = stored_bytes(12, 600, dtype, 5, shift);  // in = 600: lines long enough for the 32-lane sums
    out.push_back({"a wide nn.Linear used as its transpose", whole(wide, dtype).transpose(), wide.values.transpose()});
    // in = 45: lines of an odd length (BF16's last element outside its pairs), each line after
    // the first starting half a word on from the one before
    const Bytes odd = stored_bytes(9, 45, dtype, 6, shift);
    out.push_back({"an nn.Linear of an odd width used as its transpose", whole(odd, dtype).transpose(), odd.values.transpose()});
    const Bytes c_attn = stored_bytes(20, 60, dtype, 3, shift);  // GPT-2's (d × 3d): W_K is columns [d, 2d)
    out.push_back({"GPT-2's W_K out of c_attn", whole(c_attn, dtype).columns(20, 20, 60, 20), c_attn.values.middleCols(20, 20)});
    // GPT-NeoX's fused (3·H·hd × d) with H = 3, hd = 8, d = 16: K of head h is rows [(3h + 1)·hd, …)
    const int H = 3, hd = 8, d = 16;
    const Bytes fused = stored_bytes(3 * H * hd, d, dtype, 4, shift);
    Matrix k(d, H * hd);
    for (int h = 0; h < H; ++h) k.middleCols(h * hd, hd) = fused.values.middleRows((3 * h + 1) * hd, hd).transpose();
    out.push_back({"GPT-NeoX's K out of the fused rows", whole(fused, dtype).transpose().columns(hd, hd, 3 * hd, H * hd), k});
    return out;
}

}  // namespace

// [SECTION] Reading

TEST_CASE("a stored matrix reads as its float32 widening: every layout a loader makes, F32, F16 and BF16, aligned or not", "[stored]") {
    for (const Dtype dtype : {Dtype::F32, Dtype::F16, Dtype::BF16})
        for (const std::size_t shift : {std::size_t{0}, std::size_t{1}})
            for (const Layout& layout : layouts(dtype, shift)) {
                INFO(layout.name << ", " << safetensors::to_string(dtype) << (shift ? ", not aligned" : ""));
                const StoredMatrix& s = layout.stored;
                CHECK(s.direct() == (dtype == Dtype::F32 && shift == 0));
                REQUIRE(s.rows == layout.expected.rows());
                REQUIRE(s.cols == layout.expected.cols());
                CHECK(s.to_matrix() == layout.expected);
                CHECK(s.value(s.rows - 1, s.cols / 2) == layout.expected(s.rows - 1, s.cols / 2));
                Vector row(s.cols);
                s.widen_row(s.rows / 2, row.data());
                CHECK(row == layout.expected.row(s.rows / 2));
                CHECK_FALSE(s.first_non_finite().valid());
                // every layout's columns, read a piece at a time
                std::vector<float> piece(static_cast<std::size_t>(s.rows * 5));
                s.widen_columns(3, 5, piece.data());
                const Matrix got = s.transposed ? Matrix(Eigen::Map<const Matrix>(piece.data(), 5, s.rows).transpose())
                                                : Matrix(Eigen::Map<const Matrix>(piece.data(), s.rows, 5));
                CHECK(got == layout.expected.middleCols(3, 5));
            }
}

TEST_CASE("the first NaN or ∞ of a stored matrix is found in row-major order of the matrix as used, not as stored", "[stored]") {
    for (const Dtype dtype : {Dtype::F32, Dtype::F16, Dtype::BF16}) {
        INFO(safetensors::to_string(dtype));
        Bytes linear = stored_bytes(30, 12, dtype, 5);  // used as its transpose (12 × 30)
        const std::size_t size = safetensors::dtype_size(dtype);
        auto spoil = [&](Eigen::Index stored_row, Eigen::Index stored_col, float value) {
            unsigned char* at = linear.buffer->data() + size * static_cast<std::size_t>(stored_row * 12 + stored_col);
            if (dtype == Dtype::F32) std::memcpy(at, &value, 4);
            else {
                const std::uint16_t h = dtype == Dtype::BF16 ? safetensors::f32_to_bf16(value) : safetensors::f32_to_f16(value);
                at[0] = static_cast<unsigned char>(h & 0xff), at[1] = static_cast<unsigned char>(h >> 8);
            }
        };
        // stored (2, 9) is the used (9, 2); stored (20, 4) is the used (4, 20), which comes first
        spoil(2, 9, std::numeric_limits<float>::quiet_NaN());
        spoil(20, 4, -std::numeric_limits<float>::infinity());
        const SharedMatrix w(whole(linear, dtype).transpose());
        const Cell c = w.first_non_finite();
        CHECK(c.row == 4);
        CHECK(c.col == 20);
        CHECK(std::isinf(w(4, 20)));
        CHECK(std::isnan(w(9, 2)));
    }
}

// [SECTION] Products

TEST_CASE("a product read from stored bytes is the product with the float32 matrix", "[stored][product]") {
    for (const Dtype dtype : {Dtype::F32, Dtype::BF16})
        for (const std::size_t shift : {std::size_t{0}, std::size_t{2}})
            for (const Eigen::Index n : {1, 3, 20, 130}) {
                // (out × in) = (500 × 300) used as (300 × 500): pieces of 192 columns and a remainder
                const Bytes linear = stored_bytes(500, 300, dtype, 6, shift);
                const StoredMatrix stored = whole(linear, dtype).transpose();
                const Matrix w = stored.to_matrix();
                std::mt19937_64 rng(static_cast<std::uint64_t>(n));
                std::normal_distribution<float> normal(0.0f, 1.0f);
                const Matrix a = Matrix::NullaryExpr(n, 300, [&] { return normal(rng); });
                const Matrix bias = Matrix::NullaryExpr(1, 500, [&] { return normal(rng); });
                INFO(safetensors::to_string(dtype) << (shift ? ", not aligned" : "") << ", n = " << n);
                const SharedMatrix held(stored);
                const double tolerance = 1e-5 * std::sqrt(300.0);  // a different summation order at most
                for (const ProductKernel kernel : {ProductKernel::row_major, ProductKernel::column_major}) {
                    Matrix expected, got;
                    product_into(a, w, expected, kernel);
                    product_into(a, held, got, kernel);
                    REQUIRE(got.rows() == n);
                    REQUIRE(got.cols() == 500);
                    CHECK((got - expected).cwiseAbs().maxCoeff() <= tolerance);
                }
                Matrix expected, got;
                product_plus_bias_into(a, w, bias, expected);
                product_plus_bias_into(a, held, bias, got);
                CHECK((got - expected).cwiseAbs().maxCoeff() <= tolerance);
                // h·Eᵀ with E the stored (500 × 300) seen as a table: the tied head
                const SharedMatrix table(whole(linear, dtype));
                const Matrix h = Matrix::NullaryExpr(n, 300, [&] { return normal(rng); });
                product_into(h, Matrix(w), expected);
                product_transposed_into(h, table, got);
                CHECK((got - expected).cwiseAbs().maxCoeff() <= tolerance);
            }
}

TEST_CASE("one row against a stored matrix in any order (a decode step) is the product with its float32 widening, every layout",
          "[stored][product]") {
    for (const Dtype dtype : {Dtype::F32, Dtype::F16, Dtype::BF16})
        for (const std::size_t shift : {std::size_t{0}, std::size_t{1}})
            for (const Layout& layout : layouts(dtype, shift)) {
                INFO(layout.name << ", " << safetensors::to_string(dtype) << (shift ? ", not aligned" : ""));
                const StoredMatrix& s = layout.stored;
                std::mt19937_64 rng(7);
                std::normal_distribution<float> normal(0.0f, 1.0f);
                const Matrix a = Matrix::NullaryExpr(1, s.rows, [&] { return normal(rng); });
                const Matrix bias = Matrix::NullaryExpr(1, s.cols, [&] { return normal(rng); });
                const Matrix expected = a * layout.expected;
                const double tolerance = 1e-5 * std::sqrt(static_cast<double>(s.rows)) * std::max(1.0f, expected.cwiseAbs().maxCoeff());
                Matrix got;
                stored_row_product_into(a, s, got);
                REQUIRE(got.cols() == s.cols);
                CHECK((got - expected).cwiseAbs().maxCoeff() <= tolerance);
                stored_row_product_into(a, s, got, &bias);
                CHECK((got - (expected + bias)).cwiseAbs().maxCoeff() <= tolerance);
                // Through the weight's own products, as a decode step calls them.
                const SharedMatrix held(s);
                product_into(a, held, got, ProductKernel::any_order);
                CHECK((got - expected).cwiseAbs().maxCoeff() <= tolerance);
            }
}

TEST_CASE("one row against several stored weights in one region is each product, however many threads share it", "[stored][product]") {
    // What a decode step reads with one row: Q, K and V (a layer's three weights of depth k, each
    // stored its own way), then an MLP's gate and up; every thread takes its share of each.
    for (const Dtype dtype : {Dtype::F32, Dtype::F16, Dtype::BF16}) {
        INFO(safetensors::to_string(dtype));
        const Eigen::Index k = 70;
        const Bytes linear = stored_bytes(300, k, dtype, 11);   // nn.Linear (out × in): read as lines
        const Bytes rows = stored_bytes(k, 45, dtype, 12, 1);  // (in × out) as the engine's rows, not aligned
        const Bytes c_attn = stored_bytes(k, 3 * 20, dtype, 13);  // a view: columns [20, 40)
        const std::vector<std::pair<StoredMatrix, Matrix>> weights = {
            {whole(linear, dtype).transpose(), linear.values.transpose()},
            {whole(rows, dtype), rows.values},
            {whole(c_attn, dtype).columns(20, 20, 60, 20), c_attn.values.middleCols(20, 20)},
        };
        std::mt19937_64 rng(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const Matrix a = Matrix::NullaryExpr(1, k, [&] { return normal(rng); });
        const Matrix bias = Matrix::NullaryExpr(1, 45, [&] { return normal(rng); });
        for (const int threads : {1, 2, 3, 8}) {
            INFO(threads << " threads");
            std::vector<Matrix> out(weights.size()), again(weights.size());
            std::vector<StoredRowProduct> products, products_again;
            for (std::size_t i = 0; i < weights.size(); ++i) {
                products.push_back({&weights[i].first, &out[i], i == 1 ? &bias : nullptr});
                products_again.push_back({&weights[i].first, &again[i], i == 1 ? &bias : nullptr});
            }
            stored_row_products_into(a, products, threads);
            stored_row_products_into(a, products_again, threads);
            for (std::size_t i = 0; i < weights.size(); ++i) {
                const Matrix expected = a * weights[i].second + (i == 1 ? bias : Matrix::Zero(1, weights[i].second.cols()));
                const double tolerance = 1e-5 * std::sqrt(static_cast<double>(k)) * std::max(1.0f, expected.cwiseAbs().maxCoeff());
                REQUIRE(out[i].cols() == expected.cols());
                CHECK((out[i] - expected).cwiseAbs().maxCoeff() <= tolerance);
                CHECK(again[i] == out[i]);  // the same sums every run
            }
        }
        // Q, K and V out of one c_attn (k × 60): the tensor is read once and each view gathered
        // from it, the very sums of each view's own product.
        const std::vector<StoredMatrix> qkv = {whole(c_attn, dtype).columns(0, 20, 60, 20), whole(c_attn, dtype).columns(20, 20, 60, 20),
                                               whole(c_attn, dtype).columns(40, 20, 60, 20)};
        const Matrix bias_k = bias.leftCols(20);
        for (const int threads : {1, 2, 3}) {
            INFO(threads << " threads, Q, K and V out of one c_attn");
            std::vector<Matrix> together(3), apart(3);
            stored_row_products_into(a, {{&qkv[0], &together[0]}, {&qkv[1], &together[1], &bias_k}, {&qkv[2], &together[2]}},
                                     threads);
            for (int i = 0; i < 3; ++i) stored_row_products_into(a, {{&qkv[static_cast<size_t>(i)], &apart[static_cast<size_t>(i)]}}, threads);
            apart[1] += bias_k;
            for (int i = 0; i < 3; ++i) {
                CHECK(together[static_cast<size_t>(i)] == apart[static_cast<size_t>(i)]);
                const Matrix expected = a * c_attn.values.middleCols(20 * i, 20) + (i == 1 ? bias_k : Matrix::Zero(1, 20));
                const double tolerance = 1e-5 * std::sqrt(static_cast<double>(k)) * std::max(1.0f, expected.cwiseAbs().maxCoeff());
                CHECK((together[static_cast<size_t>(i)] - expected).cwiseAbs().maxCoeff() <= tolerance);
            }
        }
        // A row whose depth is not the weights' is refused, naming both.
        std::vector<Matrix> out(1);
        CHECK_THROWS_WITH(stored_row_products_into(Matrix::Zero(1, k + 1), {{&weights[0].first, &out[0]}}),
                          Catch::Matchers::Contains("71 and 70"));
    }
}

TEST_CASE("one row's lines, shared among threads that take from each other's shares, are each summed once and the same every run",
          "[stored][product]") {
    // Lines stored as nn.Linear's (out × in), BF16 and F32, many small chunks of them: with more
    // threads than cores, a thread whose share ends takes the back half of another's. Every line's
    // value is written (the outputs start as NaN) and is the one a single thread sums.
    for (const Dtype dtype : {Dtype::BF16, Dtype::F32}) {
        INFO(safetensors::to_string(dtype));
        const Eigen::Index k = 64;
        const Bytes tall = stored_bytes(3001, k, dtype, 21), short_one = stored_bytes(257, k, dtype, 22);
        const StoredMatrix lines = whole(tall, dtype).transpose(), few = whole(short_one, dtype).transpose();
        const Matrix a = Matrix::Random(1, k);
        std::vector<Matrix> one(2);
        stored_row_products_into(a, {{&lines, &one[0]}, {&few, &one[1]}}, 1);
        const Matrix expected = a * tall.values.transpose();
        CHECK((one[0] - expected).cwiseAbs().maxCoeff() <= 1e-4 * std::max(1.0f, expected.cwiseAbs().maxCoeff()));
        for (const int threads : {2, 3, 8})
            for (int run = 0; run < 20; ++run) {
                INFO(threads << " threads, run " << run);
                std::vector<Matrix> out = {Matrix::Constant(1, 3001, std::nanf("")), Matrix::Constant(1, 257, std::nanf(""))};
                stored_row_products_into(a, {{&lines, &out[0]}, {&few, &out[1]}}, threads);
                REQUIRE(out[0] == one[0]);
                REQUIRE(out[1] == one[1]);
            }
    }
}

TEST_CASE("a product from a stored matrix does not depend on how many threads share it", "[stored][product]") {
    const Bytes linear = stored_bytes(1000, 256, Dtype::BF16, 7);
    const SharedMatrix held(whole(linear, Dtype::BF16).transpose());
    const Matrix a = Matrix::Random(24, 256);
    Matrix one, many;
    product_into(a, held, one, ProductKernel::row_major, 1);
    for (const int chunks : {2, 3, 8}) {
        product_into(a, held, many, ProductKernel::row_major, chunks);
        CHECK(many == one);
    }
}

// [SECTION] A shared weight: widened only when asked, edited as a copy

TEST_CASE("a stored weight is widened once when its values are asked for, and an edit copies it for its holder alone", "[stored]") {
    const Bytes table = stored_bytes(40, 16, Dtype::BF16, 8);
    const SharedMatrix model(whole(table, Dtype::BF16));
    SharedMatrix scenario = model;
    const std::size_t before = stored_bytes_widened();
    CHECK(model.rows() == 40);
    CHECK(model.cols() == 16);
    CHECK(model.row_vector(7) == table.values.row(7));
    CHECK(stored_bytes_widened() == before);  // shape and rows read in place
    CHECK(*model == table.values);            // a heatmap of it: widened, once
    CHECK(*scenario == table.values);
    CHECK(stored_bytes_widened() == before + 40 * 16 * sizeof(float));
    CHECK(scenario.shares(model));
    scenario.edit()(0, 0) = 5.0f;
    CHECK_FALSE(scenario.shares(model));
    CHECK(scenario.stored() == nullptr);
    REQUIRE(model.stored() != nullptr);
    CHECK(model(0, 0) == table.values(0, 0));
    CHECK(scenario(0, 0) == 5.0f);
    CHECK(scenario.version() != model.version());

    // A holder of its own (a layer a view shows): the same values and version, widened for it alone.
    const Bytes bytes = stored_bytes(30, 8, Dtype::BF16, 9);
    const SharedMatrix other(whole(bytes, Dtype::BF16));
    {
        const SharedMatrix shown = other.own_holder();
        CHECK(shown.version() == other.version());
        CHECK_FALSE(shown.shares(other));
        const std::size_t widened = stored_bytes_widened();
        CHECK(shown.get() == bytes.values);
        CHECK(stored_bytes_widened() == widened + 30 * 8 * sizeof(float));
    }
    const std::size_t widened = stored_bytes_widened();
    CHECK(other.get() == bytes.values);  // the model's holder widens only now: it had not been
    CHECK(stored_bytes_widened() == widened + 30 * 8 * sizeof(float));
}

// [SECTION] Checkpoints

TEST_CASE("every family's checkpoint runs without widening a weight: each matrix read in the file's own dtype", "[stored][families]") {
    for (FamilyCheckpoint c : all_family_checkpoints()) {
        if (c.config.value("model_type", "") == "gpt2") continue;
        INFO("family " << c.label << ", " << safetensors::to_string(c.dtype));
        const std::string folder = (std::filesystem::temp_directory_path() / ("attnlab-test-stored-" + c.label)).string();
        write_family_checkpoint(folder, c);
        hf::OpenedModelLoad load = hf::open_model(folder, false);
        REQUIRE(load.model);
        hf::OpenedModel& model = *load.model;
        for (const hf::LayerWeights& layer : model.weights.layers) {
            std::vector<const SharedMatrix*> matrices = {&layer.w_q, &layer.w_k, &layer.w_v, &layer.w_o};
            if (model.spec.latent.kv_rank > 0) matrices = {&layer.w_q_a, &layer.w_q_b, &layer.w_kv_a, &layer.w_kv_b, &layer.w_o};
            if (layer.experts.empty()) matrices.insert(matrices.end(), {&layer.w_up, &layer.w_down});
            else matrices.push_back(&layer.router);  // a mixture of experts: the router and every expert
            for (const hf::ExpertWeights& e : layer.experts) matrices.insert(matrices.end(), {&e.w_gate, &e.w_up, &e.w_down});
            for (const SharedMatrix* w : matrices) {
                REQUIRE(w->stored() != nullptr);
                CHECK(w->stored()->dtype == c.dtype);
            }
        }
        REQUIRE(model.weights.token_embedding.stored() != nullptr);
        std::vector<int> ids = {1, 5, 3, 7, 2, 9, 4};
        if (model.spec.head == hf::HeadKind::masked_lm) {
            if (!model.spec.mask_token_id) model.spec.mask_token_id = 6;
            ids[3] = *model.spec.mask_token_id;
        }
        const std::size_t before = stored_bytes_widened();
        const ModelPass pass = hf::forward_ids(model, ids);
        REQUIRE(pass.ok);
        CHECK(stored_bytes_widened() == before);
        // What reads every layer after a pass (the NaN report, an export naming the weights) widens none either.
        for (const Trace& t : pass.layers) {
            CHECK(non_finite_report(t).matrices.empty());
            CHECK_FALSE(trace_to_json(t, false).contains("w_q"));
        }
        CHECK(stored_bytes_widened() == before);
        ModelPass again = pass;
        REQUIRE(hf::recompute_from(model, 1, again));
        CHECK(stored_bytes_widened() == before);

        // The same weights widened to float32 matrices of their own give the same pass.
        hf::OpenedModel widened = model;
        auto own = [](SharedMatrix& w) { if (w.size() != 0) w.edit(); };
        for (hf::LayerWeights& layer : widened.weights.layers) {
            for (SharedMatrix* w : {&layer.w_q, &layer.w_k, &layer.w_v, &layer.w_o, &layer.w_gate, &layer.w_up, &layer.w_down, &layer.router,
                                    &layer.w_q_a, &layer.w_q_b, &layer.w_kv_a, &layer.w_kv_b, &layer.w_g, &layer.w_z, &layer.w_b, &layer.w_a})
                own(*w);
            for (hf::ExpertWeights& e : layer.experts)
                for (SharedMatrix* w : {&e.w_gate, &e.w_up, &e.w_down}) own(*w);
        }
        for (SharedMatrix* w : {&widened.weights.token_embedding, &widened.weights.position_embedding, &widened.weights.token_type_embedding,
                                &widened.weights.lm_head, &widened.weights.mlm_dense})
            own(*w);
        CHECK(model.weights.layers[0].w_o.stored() != nullptr);  // the model's own are still read in place
        const ModelPass reference = hf::forward_ids(widened, ids);
        REQUIRE(reference.ok);
        REQUIRE(reference.layers.size() == pass.layers.size());
        double worst = 0.0;
        for (std::size_t l = 0; l < pass.layers.size(); ++l)
            for (std::size_t h = 0; h < pass.layers[l].head.size(); ++h)
                for (const auto& [a, b] : {std::pair{&pass.layers[l].head[h].weights, &reference.layers[l].head[h].weights},
                                           std::pair{&pass.layers[l].head[h].implied_weights, &reference.layers[l].head[h].implied_weights}})
                    if (a->size() != 0) worst = std::max(worst, static_cast<double>((*a - *b).cwiseAbs().maxCoeff()));
        CHECK(worst <= 1e-5);
        if (pass.logits.size() != 0) CHECK((pass.logits - reference.logits).cwiseAbs().maxCoeff() <= 1e-4);
        CHECK(pass.next_token_top5.size() == reference.next_token_top5.size());
        CHECK(pass.masked_predictions.size() == reference.masked_predictions.size());
    }
}

TEST_CASE("a BF16 GPT-2 checkpoint stays BF16: wte, wpe and c_attn's thirds read in place, a pass widens none", "[stored][gpt2]") {
    const gpt2::Checkpoint c = tiny_checkpoint();  // as write_tiny_checkpoint writes it
    const std::string folder = (std::filesystem::temp_directory_path() / "attnlab-test-stored-gpt2-bf16").string();
    gpt2::CheckpointWriteOptions options;
    options.dtype = Dtype::BF16;
    write_tiny_checkpoint(folder, options);
    const hf::OpenedModelLoad load = hf::open_model(folder);  // as the app opens it: the family table
    REQUIRE(load.model);
    const hf::Weights& opened = load.model->weights;
    for (const SharedMatrix* w : {&opened.token_embedding, &opened.position_embedding, &opened.layers[1].w_k, &opened.layers[0].w_down}) {
        REQUIRE(w->stored() != nullptr);
        CHECK(w->stored()->dtype == Dtype::BF16);
    }
    // W_K is c_attn's middle third, rounded to BF16
    CHECK(opened.layers[1].w_k(3, 5) == safetensors::bf16_to_f32(safetensors::f32_to_bf16(c.layers[1].w_k(3, 5))));
    const std::vector<int> ids = {3, 100, 7, 255, 42};  // ids of its byte symbols
    const std::size_t before = stored_bytes_widened();
    const ModelPass pass = hf::forward_ids(*load.model, ids);
    REQUIRE(pass.ok);
    CHECK(stored_bytes_widened() == before);
    CHECK(pass.next_token_top5.size() == 5);
}

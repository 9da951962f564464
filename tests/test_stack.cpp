// The one stack of layers (core/model/stack): a family's layers run by one loop, checked against
// the plain loop over run() written out here, and the recompute, ablation and refusals.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <new>
#include <functional>
#include <limits>
#include <thread>

#include "attention/engine.hpp"
#include "tensor/random.hpp"
#include "model/stack.hpp"
#include "tensor/worker_errors.hpp"

using namespace attn;

namespace {

constexpr int kD = 8, kHeads = 2, kLayers = 3, kTokens = 5, kVocab = 11;

struct Weights {
    Matrix w_q, w_k, w_v, w_o, w_1, w_2;
};

// A small family: pre-norm blocks with a feed-forward, causal, RoPE; its own weights per layer.
struct Family {
    std::vector<Weights> layers;
    Matrix embedding = normal_matrix(kVocab, kD, 90);        // (V × d)
    Matrix unembedding = normal_matrix(kD, kVocab, 91, 0.3f);  // (d × V)
    Vector unembedding_bias = normal_matrix(1, kVocab, 92);
    Vector gamma = normal_matrix(1, kD, 93), beta = normal_matrix(1, kD, 94);

    Family() {
        for (int l = 0; l < kLayers; ++l) {
            const std::uint64_t s = 100 + 10 * static_cast<std::uint64_t>(l);
            layers.push_back({xavier_uniform(kD, kD, s), xavier_uniform(kD, kD, s + 1), xavier_uniform(kD, kD, s + 2),
                              xavier_uniform(kD, kD, s + 3), xavier_uniform(kD, 2 * kD, s + 4), xavier_uniform(2 * kD, kD, s + 5)});
        }
    }

    Scenario layer(int l, const Matrix& input) const {
        const Weights& w = layers[static_cast<size_t>(l)];
        Scenario s;
        s.d_model = kD;
        s.heads = kHeads;
        s.target.tokens = {"a", "b", "c", "d", "e"};
        s.target.embeddings = input;
        s.positional = PositionalEncoding::Rotary;
        s.mask = MaskKind::Causal;
        s.w_q = w.w_q;
        s.w_k = w.w_k;
        s.w_v = w.w_v;
        s.w_o = w.w_o;
        s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
        s.block.norm = NormPlacement::Pre;
        s.block.d_ff = 2 * kD;
        s.block.w_1 = w.w_1;
        s.block.w_2 = w.w_2;
        return s;
    }

    stack::Stack make(bool tied) const {
        stack::Stack st;
        st.layers = kLayers;
        st.d_model = kD;
        st.heads = kHeads;
        st.layer_scenario = [this](int l, const Matrix& input, const Matrix*) { return layer(l, input); };
        st.head.final_norm = true;
        st.head.norm = {gamma, beta};
        st.head.unembedding = tied ? embedding : unembedding;
        st.head.tied = tied;
        st.head.bias = tied ? nullptr : &unembedding_bias;
        st.head.last_row_only = tied;
        return st;
    }

    // The plain loop, every layer through run(); `edit` changes layer `edited`'s scenario.
    Matrix logits(const Matrix& x0, bool tied, int edited = -1, const std::function<void(Scenario&)>& edit = {},
                  const stack::Ablation& ablated = {}) const {
        Matrix x = x0;
        for (int l = 0; l < kLayers; ++l) {
            Scenario s = layer(l, x);
            if (l == edited) edit(s);
            stack::ablate(s, ablated, l);
            const Trace t = run(s);
            REQUIRE(t.ok);
            x = t.block.output;
        }
        const Matrix h = layer_norm(x, 1e-5f, {gamma, beta});
        if (tied) return h.bottomRows(1) * embedding.transpose();
        Matrix out = h * unembedding;
        out.rowwise() += unembedding_bias;
        return out;
    }
};

Matrix x0() { return normal_matrix(kTokens, kD, 7); }

}  // namespace

TEST_CASE("stack / an exception in a thread of a parallel region reaches the thread that started it", "[stack][hostile]") {
    // std::bad_alloc in one head's products once ended the program from a worker (exit 134).
    WorkerErrors errors;
    std::atomic<int> ran{0};
#pragma omp parallel for num_threads(2) schedule(dynamic, 1)
    for (int i = 0; i < 64; ++i) errors.run([&] {
        ++ran;
        if (i == 37) throw std::bad_alloc();
    });
    CHECK(ran == 64);  // the other iterations ran to their end
    CHECK_THROWS_AS(errors.rethrow(), std::bad_alloc);
    WorkerErrors none;
    none.run([] {});
    CHECK_NOTHROW(none.rethrow());
}

TEST_CASE("stack / one loop: the pass is the plain loop over run(), untied (n × V) and tied (last row)", "[stack]") {
    const Family family;
    for (bool tied : {false, true}) {
        INFO((tied ? "tied, last row" : "untied, every row"));
        stack::Pass pass;
        REQUIRE(stack::forward_into(family.make(tied), x0(), Matrix(), pass));
        REQUIRE(pass.layers.size() == static_cast<size_t>(kLayers));
        const Matrix want = family.logits(x0(), tied);
        CHECK(pass.logits.rows() == (tied ? 1 : kTokens));
        CHECK(pass.logits.cols() == kVocab);
        CHECK(pass.logits == want);
        CHECK(pass.final_input == stack::layer_output(pass.layers.back()));
        // Again into the same pass (storage reused): the same numbers.
        REQUIRE(stack::forward_into(family.make(tied), x0(), Matrix(), pass));
        CHECK(pass.logits == want);
    }
}

TEST_CASE("stack / recompute from an edited layer: the layers before it kept, the ones after from its output", "[stack]") {
    const Family family;
    const stack::Stack st = family.make(false);
    stack::Pass pass;
    REQUIRE(stack::forward_into(st, x0(), Matrix(), pass));
    const Matrix first_before = pass.layers[0].block.output;
    const auto edit = [](Scenario& s) { s.w_v.edit()(0, 0) += 1.0f; };
    Scenario edited = family.layer(1, stack::layer_output(pass.layers[0]));
    edit(edited);
    REQUIRE(stack::recompute_from(st, 1, pass, &edited));
    CHECK(pass.layers[0].block.output == first_before);
    CHECK(pass.layers[1].w_v(0, 0) == edited.w_v(0, 0));
    CHECK(pass.logits == family.logits(x0(), false, 1, edit));
    CHECK_FALSE(pass.logits == family.logits(x0(), false));
    // Without an edit, from layer 1: the family's own layer again.
    REQUIRE(stack::recompute_from(st, 0, pass));
    CHECK(pass.logits == family.logits(x0(), false));
}

TEST_CASE("stack / a job's cancel flag stops a pass between two layers, on the job's thread alone", "[stack][jobs]") {
    const Family family;
    stack::Stack st = family.make(false);
    std::atomic<bool> cancel{false};
    std::vector<int> made;
    const auto layer = st.layer_scenario;
    st.layer_scenario = [&](int l, const Matrix& input, const Matrix* memory) {
        made.push_back(l);
        if (l == 0) cancel = true;  // cancelled while layer 1 runs
        return layer(l, input, memory);
    };
    stack::Pass pass;
    {
        const stack::CancelScope scope(&cancel);
        CHECK_FALSE(stack::forward_into(st, x0(), Matrix(), pass));
        CHECK(pass.errors == std::vector<std::string>{"cancelled"});
        CHECK(made == std::vector<int>{0});  // layer 2 never made
        {
            const std::atomic<bool> running{false};
            const stack::CancelScope inner(&running);  // the innermost scope counts
            made.clear();
            REQUIRE(stack::forward_into(st, x0(), Matrix(), pass));
            CHECK(made.size() == static_cast<size_t>(st.layers));
        }
        CHECK_FALSE(stack::recompute_from(st, 1, pass));  // the outer one again
        // Another thread's pass is not this job's.
        bool other_ok = false;
        std::thread([&] {
            stack::Pass other;
            other_ok = stack::forward_into(st, x0(), Matrix(), other);
        }).join();
        CHECK(other_ok);
    }
    REQUIRE(stack::forward_into(st, x0(), Matrix(), pass));  // no scope: the flag reads nothing
    CHECK(pass.logits == family.logits(x0(), false));
}

TEST_CASE("stack / an ablated head: its rows of W_O zeroed in the scenario, the family's weights kept", "[stack]") {
    const Family family;
    const stack::Stack st = family.make(false);
    const int d_k = kD / kHeads;
    stack::Pass pass;
    pass.ablated = stack::HeadSet{{1, 0}};
    REQUIRE(stack::forward_into(st, x0(), Matrix(), pass));
    CHECK(pass.layers[1].w_o->topRows(d_k).isZero(0.0f));
    CHECK_FALSE(pass.layers[1].w_o->bottomRows(d_k).isZero(0.0f));
    CHECK_FALSE(pass.layers[0].w_o->topRows(d_k).isZero(0.0f));
    CHECK_FALSE(family.layers[1].w_o.topRows(d_k).isZero(0.0f));
    CHECK(pass.logits == family.logits(x0(), false, -1, {}, pass.ablated));
    // Restored: a recompute from the layer gives the intact pass.
    pass.ablated = {};
    REQUIRE(stack::recompute_from(st, 1, pass));
    CHECK(pass.logits == family.logits(x0(), false));
    // An edited layer keeps the ablation: its rows are zeroed in a copy of the edit.
    pass.ablated = stack::HeadSet{{2, 1}};
    Scenario edited = family.layer(2, stack::layer_output(pass.layers[1]));
    REQUIRE(stack::recompute_from(st, 2, pass, &edited));
    CHECK(pass.layers[2].w_o->bottomRows(d_k).isZero(0.0f));
    CHECK_FALSE(edited.w_o->bottomRows(d_k).isZero(0.0f));
    CHECK(stack::ablated_in_layer({{0, 1}, {2, 0}, {2, 1}}, 2) == 2);
}

TEST_CASE("stack / what cannot run is refused, naming the layer, the head or the shape", "[stack]") {
    const Family family;
    const stack::Stack st = family.make(false);
    stack::Pass pass;
    CHECK_FALSE(stack::recompute_from(st, 1, pass));  // nothing computed yet
    REQUIRE(pass.errors.size() == 1);
    CHECK(pass.errors[0] == "recompute from layer 2: the pass has no layer there (run forward first)");

    pass.ablated = stack::HeadSet{{0, 2}};
    CHECK_FALSE(stack::forward_into(st, x0(), Matrix(), pass));
    REQUIRE_FALSE(pass.errors.empty());
    CHECK(pass.errors[0] == "the ablated head 3 of layer 1 does not exist: the model has 3 layers of 2 heads");
    pass.ablated = {};

    CHECK_FALSE(stack::forward_into(st, Matrix(kTokens, kD + 1), Matrix(), pass));
    CHECK(pass.errors[0] == "the embedded tokens are 5 \xC3\x97 9: expected one row of d_model 8 per token");

    REQUIRE(stack::forward_into(st, x0(), Matrix(), pass));
    Scenario edited = family.layer(1, Matrix::Zero(kTokens - 1, kD));  // a token lost
    CHECK_FALSE(stack::recompute_from(st, 1, pass, &edited));
    CHECK_FALSE(pass.ok);
    CHECK(pass.errors[0] == "layer 2: the edited scenario's X is 4 \xC3\x97 8; the model's stream is 5 \xC3\x97 8 (one row per token of the sentence)");

    stack::Stack wrong = st;
    const Matrix narrow = Matrix::Zero(kD - 1, kVocab);
    wrong.head.unembedding = narrow;
    CHECK_FALSE(stack::forward_into(wrong, x0(), Matrix(), pass));
    CHECK(pass.errors[0] == "the unembedding is 7 \xC3\x97 11: expected 8 \xC3\x97 V");
}

TEST_CASE("stack / top_k: best first, ties to the smaller index, NaN below every number", "[stack]") {
    Matrix row(1, 6);
    row << 0.5f, std::numeric_limits<float>::quiet_NaN(), 2.0f, 0.5f, -std::numeric_limits<float>::infinity(), 2.0f;
    CHECK(stack::top_k(row, 4) == std::vector<int>{2, 5, 0, 3});
    CHECK(stack::top_k(row, 6) == std::vector<int>{2, 5, 0, 3, 1, 4});
    CHECK(stack::top_k(row, 9).size() == 6);
}

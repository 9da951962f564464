#include "attention/history.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unordered_set>

#include "tensor/reflect.hpp"

namespace attn {

namespace {

using reflect::detail::is_eigen;
using reflect::detail::is_vector;

template <typename T>
constexpr bool is_plain_leaf = std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string>;

// A matrix: an Eigen one, or a weight shared with a model (kept in chunks as its values are;
// a step restored holds its own copy).
template <typename T>
constexpr bool is_matrix = is_eigen<T>::value || std::is_same_v<T, SharedMatrix>;

// A field whose storage can be large: a matrix or a list of plain values.
template <typename T>
constexpr bool is_bulk() {
    if constexpr (is_matrix<T>) return true;
    else if constexpr (is_vector<T>::value) return is_plain_leaf<typename T::value_type>;
    else return false;
}

template <typename T, bool = is_matrix<T>>
struct element_type { using type = std::remove_cv_t<std::remove_reference_t<decltype(*std::declval<const T&>().data())>>; };
template <typename T>
struct element_type<T, false> { using type = typename T::value_type; };
template <typename T>
using element_of = typename element_type<T>::type;

// Calls f(field) for every leaf of x (numbers, strings, matrices, lists of plain values),
// depth first in declaration order; lists of structs are walked element by element.
template <typename T, typename F>
void visit_leaves(T& x, F& f) {
    if constexpr (is_plain_leaf<T> || is_bulk<T>()) f(x);
    else if constexpr (is_vector<T>::value) {
        for (auto& element : x) visit_leaves(element, f);
    } else {
        reflect::for_each_field_pair(x, x, [&](auto& a, auto&) { visit_leaves(a, f); });
    }
}

template <typename T>
const void* type_tag() {
    static const char tag = 0;
    return &tag;
}

template <typename E>
size_t element_bytes(const E& e) {
    if constexpr (std::is_same_v<E, std::string>) return sizeof(std::string) + (e.capacity() > 15 ? e.capacity() : 0);
    else return sizeof(E);
}

// Bit for bit, like reflect::equal: NaN equals the same NaN, −0 differs from +0.
template <typename E>
bool same_element(const E& a, const E& b) {
    if constexpr (std::is_floating_point_v<E>) return std::memcmp(&a, &b, sizeof(E)) == 0;
    else return a == b;
}

template <typename T>
size_t count_of(const T& field) {
    return static_cast<size_t>(field.size());
}

template <typename T>
auto begin_of(const T& field) {
    if constexpr (is_matrix<T>) return field.data();
    else return field.begin();
}

template <typename T>
size_t bulk_bytes(const T& field) {
    using E = element_of<T>;
    if constexpr (std::is_same_v<E, std::string>) {
        size_t bytes = 0;
        for (const std::string& s : field) bytes += element_bytes(s);
        return bytes;
    } else {
        return count_of(field) * sizeof(E);
    }
}

}  // namespace

// [SECTION] Freezing and thawing a scenario

History::Snapshot History::freeze(Scenario scenario, std::string action, const Snapshot* like, const Snapshot* other) {
    Snapshot snapshot;
    snapshot.action = std::move(action);
    snapshot.rest = std::move(scenario);
    int leaf = 0;
    auto cut = [&](auto& field) {
        using T = std::decay_t<decltype(field)>;
        const int index = leaf++;
        if constexpr (std::is_same_v<T, std::string>) {
            snapshot.small_bytes += element_bytes(field) - sizeof(std::string);
        } else if constexpr (is_bulk<T>()) {
            using E = element_of<T>;
            const size_t bytes = bulk_bytes(field);
            if (bytes < kChunkBytes) {
                snapshot.small_bytes += bytes;
                return;
            }
            Piece piece;
            piece.leaf = index;
            piece.type = type_tag<T>();
            if constexpr (is_matrix<T>) {
                piece.rows = static_cast<long>(field.rows());
                piece.cols = static_cast<long>(field.cols());
            } else {
                piece.rows = static_cast<long>(field.size());
            }
            // The same field in the neighbouring steps, when it has the same kind and shape.
            std::vector<const Piece*> candidates;
            for (const Snapshot* s : {like, other}) {
                if (!s) continue;
                for (const Piece& p : s->pieces)
                    if (p.leaf == index && p.type == piece.type && p.rows == piece.rows && p.cols == piece.cols)
                        candidates.push_back(&p);
            }
            const size_t count = count_of(field);
            const size_t per_chunk = std::max<size_t>(1, kChunkBytes / sizeof(E));
            const auto first = begin_of(field);
            for (size_t start = 0, j = 0; start < count; start += per_chunk, ++j) {
                const size_t n = std::min(per_chunk, count - start);
                const Chunk* shared = nullptr;
                for (const Piece* p : candidates) {
                    if (j >= p->chunks.size()) continue;
                    const auto& old = *static_cast<const std::vector<E>*>(p->chunks[j].data.get());
                    if (old.size() != n) continue;
                    bool same = true;
                    for (size_t i = 0; i < n && same; ++i) same = same_element<E>(old[i], first[start + i]);
                    if (same) {
                        shared = &p->chunks[j];
                        break;
                    }
                }
                if (shared) {
                    piece.chunks.push_back(*shared);
                    continue;
                }
                auto data = std::make_shared<const std::vector<E>>(first + start, first + start + n);
                size_t chunk_bytes = 0;
                for (size_t i = 0; i < n; ++i) chunk_bytes += element_bytes((*data)[i]);
                piece.chunks.push_back(Chunk{std::move(data), chunk_bytes});
            }
            field = T();  // the snapshot keeps the chunks instead
            snapshot.pieces.push_back(std::move(piece));
        }
    };
    visit_leaves(snapshot.rest, cut);
    return snapshot;
}

Scenario History::thaw(const Snapshot& snapshot) {
    Scenario scenario = snapshot.rest;
    int leaf = 0;
    size_t next = 0;
    auto restore = [&](auto& field) {
        using T = std::decay_t<decltype(field)>;
        const int index = leaf++;
        if constexpr (is_bulk<T>()) {
            if (next >= snapshot.pieces.size() || snapshot.pieces[next].leaf != index) return;
            using E = element_of<T>;
            const Piece& piece = snapshot.pieces[next++];
            if constexpr (is_matrix<T>) {
                auto& matrix = [&]() -> auto& {
                    if constexpr (std::is_same_v<T, SharedMatrix>) return field.edit();
                    else return field;
                }();
                matrix.resize(piece.rows, piece.cols);
                size_t at = 0;
                for (const Chunk& c : piece.chunks) {
                    const auto& part = *static_cast<const std::vector<E>*>(c.data.get());
                    std::copy(part.begin(), part.end(), matrix.data() + at);
                    at += part.size();
                }
            } else {
                field.clear();
                field.reserve(static_cast<size_t>(piece.rows));
                for (const Chunk& c : piece.chunks) {
                    const auto& part = *static_cast<const std::vector<E>*>(c.data.get());
                    field.insert(field.end(), part.begin(), part.end());
                }
            }
        }
    };
    visit_leaves(scenario, restore);
    return scenario;
}

// [SECTION] Steps

void History::record(const Scenario& before, std::string action) {
    redo_.clear();  // a new edit ends the redo branch
    undo_.push_back(freeze(before, std::move(action), undo_.empty() ? nullptr : &undo_.back(), nullptr));
    trim();
}

const std::string& History::undo_action() const {
    static const std::string none;
    return undo_.empty() ? none : undo_.back().action;
}

const std::string& History::redo_action() const {
    static const std::string none;
    return redo_.empty() ? none : redo_.back().action;
}

bool History::undo(Scenario& current) {
    if (undo_.empty()) return false;
    Snapshot previous = std::move(undo_.back());
    undo_.pop_back();
    Scenario restored = thaw(previous);
    redo_.push_back(freeze(std::move(current), previous.action, &previous, redo_.empty() ? nullptr : &redo_.back()));
    current = std::move(restored);
    return true;
}

bool History::redo(Scenario& current) {
    if (redo_.empty()) return false;
    Snapshot next = std::move(redo_.back());
    redo_.pop_back();
    Scenario restored = thaw(next);
    undo_.push_back(freeze(std::move(current), next.action, &next, undo_.empty() ? nullptr : &undo_.back()));
    current = std::move(restored);
    trim();
    return true;
}

void History::clear() {
    undo_.clear();
    redo_.clear();
}

size_t History::bytes() const {
    size_t total = 0;
    std::unordered_set<const void*> counted;
    for (const auto* steps : {&undo_, &redo_})
        for (const Snapshot& s : *steps) {
            total += sizeof(Snapshot) + s.small_bytes + s.action.size();
            for (const Piece& p : s.pieces)
                for (const Chunk& c : p.chunks)
                    if (counted.insert(c.data.get()).second) total += c.bytes;
        }
    return total;
}

void History::trim() {
    while (undo_.size() > max_depth_) undo_.pop_front();
    // The newest step always stays: one undo works whatever the scenario's size.
    while (undo_.size() > 1 && bytes() > max_bytes_) undo_.pop_front();
}

}  // namespace attn

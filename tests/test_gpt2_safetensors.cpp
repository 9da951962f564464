// Safetensors: the float conversions bit for bit, a file written byte by byte from the
// specification, round trips through the writer, and every bad file refused with a message
// naming the file and the tensor.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <sys/stat.h>

#include "joined.hpp"
#include "tensor/safetensors.hpp"
#include "tensor/random.hpp"

using namespace attn;
using namespace attn::safetensors;
using attn::testing::joined;
using Catch::Matchers::Contains;

namespace {

std::uint32_t bits(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    return x;
}

float from_bits(std::uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// A file image: the header text's length as 8 little-endian bytes, the text, the data.
std::vector<unsigned char> image(const std::string& header, const std::vector<unsigned char>& data = {}) {
    std::vector<unsigned char> bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<unsigned char>(static_cast<std::uint64_t>(header.size()) >> (8 * i)));
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.insert(bytes.end(), data.begin(), data.end());
    return bytes;
}

std::vector<std::string> open_errors(const std::vector<unsigned char>& bytes, const std::string& name = "bad.safetensors") {
    std::vector<std::string> errors;
    const auto file = SafetensorsFile::from_memory(bytes.data(), bytes.size(), name, errors);
    if (file) errors.push_back("(opened)");
    return errors;
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("F16 from float32: hand-computed bit patterns, rounding to nearest even") {
    CHECK(f32_to_f16(1.0f) == 0x3C00);
    CHECK(f32_to_f16(-2.0f) == 0xC000);
    CHECK(f32_to_f16(0.0f) == 0x0000);
    CHECK(f32_to_f16(-0.0f) == 0x8000);
    CHECK(f32_to_f16(65504.0f) == 0x7BFF);                     // the largest half
    CHECK(f32_to_f16(65519.0f) == 0x7BFF);                     // below the midpoint to 2^16
    CHECK(f32_to_f16(65520.0f) == 0x7C00);                     // the midpoint: ties to even, and 2^16 is ∞
    CHECK(f32_to_f16(1e10f) == 0x7C00);
    CHECK(f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);        // the smallest normal
    CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);        // the smallest subnormal
    CHECK(f32_to_f16(std::ldexp(1023.0f, -24)) == 0x03FF);     // the largest subnormal
    CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);        // half the smallest: a tie, to even (0)
    CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);        // above the tie: up
    CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);        // 1.5·2^-24, a tie between 1 and 2: to even (2)
    CHECK(f32_to_f16(std::ldexp(5.0f, -25)) == 0x0002);        // 2.5·2^-24, a tie between 2 and 3: to even (2)
    CHECK(f32_to_f16(std::ldexp(2047.0f, -25)) == 0x0400);     // rounds up out of the subnormals into 2^-14
    CHECK(f32_to_f16(std::ldexp(1.0f, -26)) == 0x0000);
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);       // halfway between 1 and 1+2^-10: to even (1)
    CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);   // halfway between 0x3C01 and 0x3C02: to even
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3C01);  // just above halfway: up
    CHECK(f32_to_f16(std::numeric_limits<float>::infinity()) == 0x7C00);
    CHECK(f32_to_f16(-std::numeric_limits<float>::infinity()) == 0xFC00);
    CHECK(f32_to_f16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    const std::uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
    CHECK((nan & 0x7C00) == 0x7C00);
    CHECK((nan & 0x03FF) != 0);
    // A NaN whose payload lies only in the 13 dropped bits stays a NaN, not ∞.
    const std::uint16_t low_payload = f32_to_f16(from_bits(0x7F800001u));
    CHECK((low_payload & 0x7C00) == 0x7C00);
    CHECK((low_payload & 0x03FF) != 0);
    CHECK((f32_to_f16(from_bits(0xFFC00000u)) & 0x8000) == 0x8000);  // a negative NaN keeps its sign
}

TEST_CASE("F16 to float32: exact (subnormals, ±∞, NaN), and every half survives the round trip") {
    CHECK(f16_to_f32(0x3C00) == 1.0f);
    CHECK(f16_to_f32(0xC000) == -2.0f);
    CHECK(f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
    CHECK(f16_to_f32(0x0200) == std::ldexp(1.0f, -15));
    CHECK(f16_to_f32(0x03FF) == std::ldexp(1023.0f, -24));
    CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));
    CHECK(f16_to_f32(0x3555) == 0.333251953125f);
    CHECK(bits(f16_to_f32(0x8000)) == 0x80000000u);  // −0
    CHECK(f16_to_f32(0x7C00) == std::numeric_limits<float>::infinity());
    CHECK(f16_to_f32(0xFC00) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(f16_to_f32(0x7E00)));
    CHECK(std::isnan(f16_to_f32(0x7C01)));
    CHECK(bits(f16_to_f32(0x7C01)) == 0x7F802000u);  // the payload moves up 13 bits
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const float f = f16_to_f32(static_cast<std::uint16_t>(h));
        const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
        if (nan) {
            REQUIRE(std::isnan(f));
            REQUIRE(f32_to_f16(f) == (h | 0x200));  // quieted, payload kept
        } else {
            REQUIRE(f32_to_f16(f) == h);
        }
    }
}

TEST_CASE("BF16: the top half of a float32, rounded to nearest even") {
    CHECK(f32_to_bf16(1.0f) == 0x3F80);
    CHECK(f32_to_bf16(-2.0f) == 0xC000);
    CHECK(f32_to_bf16(std::numeric_limits<float>::infinity()) == 0x7F80);
    CHECK(f32_to_bf16(-std::numeric_limits<float>::infinity()) == 0xFF80);
    CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);       // halfway between 1 and 1+2^-7: to even
    CHECK(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);   // halfway, odd below: up to even
    CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) == 0x3F81);
    CHECK(f32_to_bf16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds past the largest bf16 to ∞
    CHECK(f32_to_bf16(from_bits(0x00010000u)) == 0x0001);              // a subnormal kept as it is
    const std::uint16_t low_payload = f32_to_bf16(from_bits(0x7F800001u));  // a NaN never rounds into ∞
    CHECK((low_payload & 0x7F80) == 0x7F80);
    CHECK((low_payload & 0x007F) != 0);
    CHECK(bf16_to_f32(0x3F80) == 1.0f);
    CHECK(bf16_to_f32(0xC000) == -2.0f);
    CHECK(bf16_to_f32(0x0001) == from_bits(0x00010000u));
    CHECK(bf16_to_f32(0xFF80) == -std::numeric_limits<float>::infinity());
    CHECK(std::isnan(bf16_to_f32(0x7FC0)));
    for (std::uint32_t b = 0; b < 65536; ++b) {
        const float f = bf16_to_f32(static_cast<std::uint16_t>(b));
        REQUIRE(bits(f) == b << 16);
        if (!std::isnan(f)) REQUIRE(f32_to_bf16(f) == b);
    }
}

TEST_CASE("a file written byte by byte from the specification reads back") {
    // 198 = 0xC6 bytes of header, then 24 bytes of data.
    const std::string header =
        R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
        R"("b":{"dtype":"F16","shape":[3],"data_offsets":[16,22]},)"
        R"("c":{"dtype":"BF16","shape":[],"data_offsets":[22,24]},"__metadata__":{"format":"pt"}})";
    REQUIRE(header.size() == 198);
    std::vector<unsigned char> bytes = {0xC6, 0, 0, 0, 0, 0, 0, 0};
    bytes.insert(bytes.end(), header.begin(), header.end());
    const std::vector<unsigned char> data = {
        0x00, 0x00, 0x80, 0x3F,  // a: 1.0f
        0x00, 0x00, 0x00, 0xC0,  //    -2.0f
        0x00, 0x00, 0x00, 0x3F,  //    0.5f
        0x00, 0xE0, 0x7F, 0x47,  //    65504.0f
        0x00, 0x3C,              // b: 1.0 (0x3C00)
        0x00, 0x80,              //    -0.0 (0x8000)
        0x01, 0x00,              //    2^-24 (0x0001)
        0x80, 0xFF,              // c: -inf (0xFF80)
    };
    bytes.insert(bytes.end(), data.begin(), data.end());
    const std::string path = "test_gpt2_by_hand.safetensors";
    write_bytes(path, bytes);

    std::vector<std::string> errors;
    const auto file = SafetensorsFile::open(path, errors);
    REQUIRE(file);
    CHECK(errors.empty());
    CHECK(file->names() == std::vector<std::string>{"a", "b", "c"});
    CHECK(file->metadata().at("format") == "pt");
    REQUIRE(file->info("a"));
    CHECK(file->info("a")->shape == std::vector<std::int64_t>{2, 2});
    CHECK(file->info("c")->shape.empty());
    CHECK(file->info("c")->element_count == 1);
    CHECK(file->info("b")->begin == 16);
    CHECK(file->info("b")->end == 22);
    CHECK_FALSE(file->has("d"));
    std::vector<float> values;
    REQUIRE(file->read("a", values, errors));
    CHECK(values == std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f});
    REQUIRE(file->read("b", values, errors));
    REQUIRE(values.size() == 3);
    CHECK(values[0] == 1.0f);
    CHECK(bits(values[1]) == 0x80000000u);
    CHECK(values[2] == std::ldexp(1.0f, -24));
    REQUIRE(file->read("c", values, errors));
    CHECK(values == std::vector<float>{-std::numeric_limits<float>::infinity()});
    CHECK(errors.empty());
    CHECK_FALSE(file->read("d", values, errors));
    CHECK_THAT(joined(errors), Contains(path) && Contains("tensor 'd' is missing"));
    std::filesystem::remove(path);
}

TEST_CASE("the writer and the reader agree in F32, F16 and BF16") {
    const float inf = std::numeric_limits<float>::infinity();
    Matrix weights = normal_matrix(5, 7, 3, 10.0f);
    weights(0, 0) = inf;
    weights(0, 1) = -inf;
    weights(0, 2) = std::numeric_limits<float>::quiet_NaN();
    weights(0, 3) = 1e-7f;        // a half subnormal
    weights(0, 4) = 70000.0f;     // beyond the largest half
    weights(0, 5) = -0.0f;
    const Vector bias = normal_matrix(1, 7, 4);
    const float scalar = 3.25f;
    const Matrix empty(2, 0);
    const std::vector<NamedTensor> tensors = {
        named_tensor("layer.weight", weights), named_tensor("layer.bias", bias), {"scale", {}, &scalar}, {"nothing", {2, 0}, empty.data()}};
    const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "caf\xC3\xA9"}};

    for (const Dtype dtype : {Dtype::F32, Dtype::F16, Dtype::BF16}) {
        INFO(to_string(dtype));
        auto expected = [&](float x) {
            return dtype == Dtype::F32 ? x : dtype == Dtype::F16 ? f16_to_f32(f32_to_f16(x)) : bf16_to_f32(f32_to_bf16(x));
        };
        const std::string path = std::string("test_gpt2_round_trip_") + to_string(dtype) + ".safetensors";
        std::string error;
        REQUIRE(write_safetensors(path, tensors, metadata, dtype, &error));
        CHECK(error.empty());
        CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
        std::vector<std::string> errors;
        const auto file = SafetensorsFile::open(path, errors);
        REQUIRE(file);
        CHECK(file->metadata() == metadata);
        CHECK(file->info("layer.weight")->dtype == to_string(dtype));
        CHECK(file->info("layer.bias")->shape == std::vector<std::int64_t>{7});
        std::vector<float> values;
        REQUIRE(file->read("layer.weight", values, errors));
        REQUIRE(values.size() == 35);
        for (int i = 0; i < 35; ++i) {
            const float want = expected(weights.data()[i]);
            if (std::isnan(want)) CHECK(std::isnan(values[i]));
            else CHECK(bits(values[i]) == bits(want));
        }
        REQUIRE(file->read("layer.bias", values, errors));
        for (int i = 0; i < 7; ++i) CHECK(values[i] == expected(bias(i)));
        REQUIRE(file->read("scale", values, errors));
        CHECK(values == std::vector<float>{3.25f});
        REQUIRE(file->read("nothing", values, errors));
        CHECK(values.empty());
        // The data section starts on an 8-byte boundary.
        std::ifstream in(path, std::ios::binary);
        unsigned char length[8];
        in.read(reinterpret_cast<char*>(length), 8);
        CHECK(length[0] % 8 == 0);
        std::filesystem::remove(path);
    }
    // The same bytes in memory as on disk.
    std::string error;
    const auto bytes = safetensors_bytes(tensors, metadata, Dtype::F16, &error);
    std::vector<std::string> errors;
    const auto file = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "memory", errors);
    REQUIRE(file);
    CHECK(file->names().size() == 4);
}

TEST_CASE("the writer refuses what it cannot write, and says why") {
    const float one = 1.0f;
    std::string error;
    CHECK_FALSE(write_safetensors("test_gpt2_refused.safetensors", {{"a", {1}, &one}, {"a", {1}, &one}}, {}, Dtype::F32, &error));
    CHECK_THAT(error, Contains("'a' is given twice"));
    CHECK_FALSE(write_safetensors("test_gpt2_refused.safetensors", {{"__metadata__", {1}, &one}}, {}, Dtype::F32, &error));
    CHECK_THAT(error, Contains("reserved"));
    CHECK_FALSE(write_safetensors("test_gpt2_refused.safetensors", {{"a", {-1}, &one}}, {}, Dtype::F32, &error));
    CHECK_THAT(error, Contains("negative"));
    CHECK_FALSE(write_safetensors("no-such-folder/x.safetensors", {{"a", {1}, &one}}, {}, Dtype::F32, &error));
    CHECK_THAT(error, Contains("cannot write no-such-folder/x.safetensors"));
    CHECK_FALSE(std::filesystem::exists("test_gpt2_refused.safetensors"));
}

TEST_CASE("every bad safetensors file gives a message naming the file and the tensor") {
    const std::vector<unsigned char> sixteen(16, 0);
    auto tensor = [](const std::string& body) { return "{\"w\": " + body + "}"; };
    struct Case {
        const char* what;
        std::vector<unsigned char> bytes;
        std::vector<std::string> says;
    };
    std::vector<unsigned char> absurd(16, 0xFF);
    std::vector<unsigned char> beyond = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    const std::vector<Case> cases = {
        {"an empty file", {}, {"0 bytes", "8-byte header length"}},
        {"5 bytes", {1, 2, 3, 4, 5}, {"5 bytes", "8-byte header length"}},
        {"an absurd header length", absurd, {"header length is 18446744073709551615", "at most 100000000"}},
        {"a header length beyond the file", beyond, {"header length is 100 bytes", "only 2", "cut short"}},
        {"a header that is not JSON", image("{not json"), {"the JSON header", "not valid JSON"}},
        {"a header with invalid UTF-8", image("{\"w\xFF\": 1}"), {"the JSON header", "not valid JSON"}},
        {"a header that is an array", image("[1, 2]"), {"the JSON header is an array", "expected an object"}},
        {"an entry that is not an object", image(tensor("3")), {"tensor 'w'", "expected an object with dtype, shape and data_offsets"}},
        {"no dtype", image(tensor(R"({"shape": [4], "data_offsets": [0, 16]})"), sixteen), {"tensor 'w'", "no 'dtype'"}},
        {"a dtype of the wrong type", image(tensor(R"({"dtype": 4, "shape": [4], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "'dtype' is an integer", "expected a string"}},
        {"an unknown dtype", image(tensor(R"({"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "unknown dtype \"Q4\""}},
        {"no shape", image(tensor(R"({"dtype": "F32", "data_offsets": [0, 16]})"), sixteen), {"tensor 'w'", "no 'shape'"}},
        {"a shape that is not an array", image(tensor(R"({"dtype": "F32", "shape": "4", "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "'shape' is a string"}},
        {"a negative dimension", image(tensor(R"({"dtype": "F32", "shape": [2, -2], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "'shape' entry 2 is a negative integer -2", "non-negative"}},
        {"a fractional dimension", image(tensor(R"({"dtype": "F32", "shape": [1.5], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "'shape' entry 1 is a fractional number"}},
        {"a huge dimension", image(tensor(R"({"dtype": "F32", "shape": [18446744073709551615], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "18446744073709551615", "at most 2^40"}},
        {"a product that overflows", image(tensor(R"({"dtype": "F32", "shape": [1099511627776, 1099511627776, 4], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "more than 2^60 elements"}},
        {"no data_offsets", image(tensor(R"({"dtype": "F32", "shape": [4]})"), sixteen), {"tensor 'w'", "no 'data_offsets'"}},
        {"one offset", image(tensor(R"({"dtype": "F32", "shape": [4], "data_offsets": [0]})"), sixteen),
         {"tensor 'w'", "'data_offsets' is [0]", "two non-negative integers"}},
        {"offsets as strings", image(tensor(R"({"dtype": "F32", "shape": [4], "data_offsets": ["0", "16"]})"), sixteen),
         {"tensor 'w'", "'data_offsets'", "expected [begin, end]"}},
        {"a negative offset", image(tensor(R"({"dtype": "F32", "shape": [4], "data_offsets": [-4, 12]})"), sixteen),
         {"tensor 'w'", "expected [begin, end]"}},
        {"end before begin", image(tensor(R"({"dtype": "F32", "shape": [1], "data_offsets": [8, 4]})"), sixteen),
         {"tensor 'w'", "data_offsets [8, 4]", "end is before begin"}},
        {"offsets past the data", image(tensor(R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 32]})"), sixteen),
         {"tensor 'w'", "data_offsets [0, 32]", "past the end of the data section (16 bytes)"}},
        {"a size that disagrees with the shape", image(tensor(R"({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]})"), sixteen),
         {"tensor 'w'", "hold 12 bytes", "shape [2, 2] of F32 needs 16 bytes (4 × 4)"}},
        {"a size that disagrees in F16", image(tensor(R"({"dtype": "F16", "shape": [4], "data_offsets": [0, 16]})"), sixteen),
         {"tensor 'w'", "hold 16 bytes", "needs 8 bytes"}},
        {"metadata that is not an object", image(R"({"__metadata__": [1]})"), {"'__metadata__' is an array"}},
        {"metadata that is not strings", image(R"({"__metadata__": {"epoch": 3}})"), {"'__metadata__' key 'epoch' is an integer"}},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        const std::string message = joined(open_errors(c.bytes));
        CHECK_THAT(message, Contains("bad.safetensors: "));
        CHECK_THAT(message, !Contains("(opened)"));
        for (const auto& fragment : c.says) CHECK_THAT(message, Contains(fragment));
    }
}

TEST_CASE("the tensors must tile the data section: no byte shared, none left over") {
    auto entry = [](const char* name, int begin, int end) {
        return "\"" + std::string(name) + "\": {\"dtype\": \"F32\", \"shape\": [" + std::to_string((end - begin) / 4) +
               "], \"data_offsets\": [" + std::to_string(begin) + ", " + std::to_string(end) + "]}";
    };
    const std::vector<unsigned char> data(16, 0);
    // Good: in any order in the header, each tensor begins where another ends.
    CHECK(open_errors(image("{" + entry("b", 8, 16) + ", " + entry("a", 0, 8) + "}", data)) == std::vector<std::string>{"(opened)"});
    CHECK(open_errors(image("{" + entry("a", 0, 16) + ", " + entry("empty", 16, 16) + "}", data)) == std::vector<std::string>{"(opened)"});
    struct Case {
        const char* what;
        std::string header;
        std::vector<std::string> says;
    };
    const std::vector<Case> cases = {
        {"two tensors on the same bytes", "{" + entry("a", 0, 16) + ", " + entry("b", 0, 16) + "}",
         {"tensor 'b': data_offsets [0, 16] overlap tensor 'a' [0, 16]", "each byte of the data section belongs to one tensor"}},
        {"a tensor inside another", "{" + entry("a", 0, 16) + ", " + entry("b", 4, 8) + "}", {"tensor 'b'", "overlap tensor 'a'"}},
        {"a gap between tensors", "{" + entry("a", 0, 4) + ", " + entry("b", 8, 16) + "}",
         {"bytes [4, 8) of the data section belong to no tensor (before tensor 'b')"}},
        {"bytes left at the end", "{" + entry("a", 0, 8) + "}", {"bytes [8, 16) at the end of the file belong to no tensor"}},
        {"a gap at the start", "{" + entry("a", 8, 16) + "}", {"bytes [0, 8) of the data section belong to no tensor"}},
        {"a tensor named twice", "{" + entry("a", 0, 8) + ", " + entry("a", 8, 16) + "}",
         {"the JSON header", "key 'a' appears twice in the same object"}},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        const std::string message = joined(open_errors(image(c.header, data)));
        CHECK_THAT(message, Contains("bad.safetensors: ") && !Contains("(opened)"));
        for (const auto& fragment : c.says) CHECK_THAT(message, Contains(fragment));
    }
}

TEST_CASE("a header's size is bounded while it is read: nesting, and the number of tensors") {
    // 90 MB of '[' once cost gigabytes; the header nests at most 4 levels.
    CHECK_THAT(joined(open_errors(image(std::string(1 << 20, '[')))),
               Contains("the JSON header: line 1, column 5") && Contains("nested deeper than 4 levels") &&
                   Contains("; a safetensors header file nests at most 4"));
    // A million tensors once cost a gigabyte: the header holds at most 2^20 values.
    std::string header = "{";
    for (int i = 0; i < 200000; ++i) header += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";
    header += "}";
    CHECK_THAT(joined(open_errors(image(header))), Contains("more than 1048576 values; a safetensors header file holds at most 1048576"));
}

TEST_CASE("a FIFO or a device in place of a safetensors file is refused without blocking") {
    const std::string fifo = (std::filesystem::temp_directory_path() / "attnlab-test-fifo.safetensors").string();
    std::filesystem::remove(fifo);
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::vector<std::string> errors;
    CHECK_FALSE(SafetensorsFile::open(fifo, errors));   // opening it for reading would wait for a writer forever
    CHECK_THAT(joined(errors), Contains(fifo + ": is a FIFO (named pipe), not a safetensors file"));
    std::filesystem::remove(fifo);
    errors.clear();
    CHECK_FALSE(SafetensorsFile::open("/dev/zero", errors));
    CHECK_THAT(joined(errors), Contains("/dev/zero: is a character device"));
}

TEST_CASE("dtypes other than F32, F16, BF16 are listed but refused when read") {
    const auto bytes = image(R"({"steps": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]},)"
                             R"( "mask": {"dtype": "BOOL", "shape": [4], "data_offsets": [16, 20]},)"
                             R"( "w": {"dtype": "F64", "shape": [1], "data_offsets": [20, 28]}})",
                             std::vector<unsigned char>(28, 0));
    std::vector<std::string> errors;
    const auto file = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "typed.safetensors", errors);
    REQUIRE(file);
    std::vector<float> values;
    for (const char* name : {"steps", "mask", "w"}) {
        errors.clear();
        CHECK_FALSE(file->read(name, values, errors));
        CHECK_THAT(joined(errors), Contains("typed.safetensors: tensor '" + std::string(name) + "'") && Contains("only F32, F16 and BF16"));
    }
    CHECK_THAT(joined(errors), Contains("dtype F64"));
}

TEST_CASE("files that cannot be opened name the path") {
    std::vector<std::string> errors;
    CHECK_FALSE(SafetensorsFile::open("no-such.safetensors", errors));
    CHECK_THAT(joined(errors), Contains("no-such.safetensors: cannot open"));
    errors.clear();
    std::filesystem::create_directories("test_gpt2_folder.safetensors");
    CHECK_FALSE(SafetensorsFile::open("test_gpt2_folder.safetensors", errors));
    CHECK_THAT(joined(errors), Contains("test_gpt2_folder.safetensors: is a folder"));
    std::filesystem::remove_all("test_gpt2_folder.safetensors");
    errors.clear();
    write_bytes("test_gpt2_short.safetensors", {1, 2, 3});
    CHECK_FALSE(SafetensorsFile::open("test_gpt2_short.safetensors", errors));
    CHECK_THAT(joined(errors), Contains("test_gpt2_short.safetensors: 3 bytes"));
    std::filesystem::remove("test_gpt2_short.safetensors");
}

TEST_CASE("a cut or scrambled file never crashes the reader") {
    const Matrix m = normal_matrix(3, 4, 9);
    const Vector v = normal_matrix(1, 5, 10);
    std::string error;
    const auto good = safetensors_bytes({named_tensor("m", m), named_tensor("v", v)}, {{"k", "v"}}, Dtype::BF16, &error);
    REQUIRE(good.size() > 8);
    int opened = 0;
    for (std::size_t length = 0; length <= good.size(); ++length) {
        std::vector<std::string> errors;
        const auto file = SafetensorsFile::from_memory(good.data(), length, "cut", errors);
        if (file) {
            ++opened;
            std::vector<float> values;
            for (const auto& name : file->names()) file->read(name, values, errors);
        } else {
            CHECK_FALSE(errors.empty());
        }
    }
    CHECK(opened == 1);  // only the whole file
    Rng rng(42);
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<unsigned char> bytes = good;
        const int flips = 1 + static_cast<int>(rng.next_u64() % 4);
        for (int f = 0; f < flips; ++f) bytes[rng.next_u64() % bytes.size()] = static_cast<unsigned char>(rng.next_u64());
        std::vector<std::string> errors;
        const auto file = SafetensorsFile::from_memory(bytes.data(), bytes.size(), "scrambled", errors);
        if (!file) {
            CHECK_FALSE(errors.empty());
            continue;
        }
        std::vector<float> values;
        for (const auto& name : file->names()) file->read(name, values, errors);
    }
}

// Writes the models the binary tests open: DIR/gpt2 (a tiny GPT-2 checkpoint in the Hugging
// Face layout, the bad-model catalogue's), DIR/model.json (a model file as the app saves
// one, vocabulary a … h and |), DIR/gpt2-truncated (model.safetensors cut 64 bytes short),
// DIR/llama (the Llama family's tiny checkpoint with a byte-level tokenizer.json of 402 tokens:
// RoPE, so a sentence of any length runs), DIR/gemma2 (Gemma 2's, with that tokenizer) and
// DIR/gemma3 (Gemma 3 as published: its tokenizer.json one token past the embedding) and
// DIR/olmo2 (OLMo 2's, untied, with the byte-level tokenizer), DIR/phi3 (Phi-3's fused tensors
// and LongRoPE, tied, with that tokenizer), DIR/smollm3 (SmolLM3's, its fourth layer NoPE) and
// DIR/qwen3_moe (Qwen3-MoE's: 8 experts, 3 kept per token), DIR/qwen2_moe (Qwen2-MoE's: 6
// experts, 2 kept, and a gated shared expert), DIR/mixtral and DIR/gpt_oss (gpt-oss's: sinks,
// YaRN, 4 fused experts with biases, the top 2 logits then softmax) and DIR/deepseek_v3
// (DeepSeek-V3's: latent attention, a dense first layer, then 8 experts in 4 groups), DIR/llama4 and
// DIR/qwen3_next (three Gated DeltaNet layers to one gated full layer) and DIR/qwen3_5 (Qwen3.5's
// multimodal folder as published: text_config, model.language_model.*, a vision tower read past) and
// DIR/modernbert (ModernBERT's encoder: two of its four layers local, a band of ±2; <mask> its mask token) and
// DIR/diffllama (DiffLlama's: 4 heads in 2 differential pairs, three layers).
#include <filesystem>
#include <iostream>

#include "bad_model_catalogue.hpp"
#include "hf_family_fixtures.hpp"
#include "train_fixtures.hpp"

using namespace attn;

namespace {

// `c` with an embedding of the byte-level tokenizer's 402 rows (d_model columns of scale
// `scale`), written to `folder` with that tokenizer.json.
void write_with_tokenizer(const std::string& folder, const testing::families::FamilyCheckpoint& c, std::int64_t d_model, double scale) {
    testing::families::write_with_tokenizer(folder, c, 402, d_model, scale,
                                            std::string(ATTNLAB_TEST_DATA) + "/tokenizers/bytelevel-roberta-prefix-space.json");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: write_model_fixtures DIR\n";
        return 2;
    }
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir);
    testing::write_tiny_checkpoint(dir + "/gpt2");
    testing::write_tiny_checkpoint(dir + "/gpt2-truncated");
    std::filesystem::resize_file(dir + "/gpt2-truncated/model.safetensors",
                                 std::filesystem::file_size(dir + "/gpt2-truncated/model.safetensors") - 64);
    write_with_tokenizer(dir + "/llama", testing::families::llama_checkpoint(), 24, 0.5);
    write_with_tokenizer(dir + "/gemma2", testing::families::gemma2_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/olmo2", testing::families::olmo2_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/phi3", testing::families::phi3_checkpoint(), 24, 1.0);
    write_with_tokenizer(dir + "/smollm3", testing::families::smollm3_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/qwen3_moe", testing::families::qwen3_moe_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/qwen2_moe", testing::families::qwen2_moe_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/mixtral", testing::families::mixtral_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/gpt_oss", testing::families::gpt_oss_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/deepseek_v3", testing::families::deepseek_v3_checkpoint(), 16, 1.0);
    testing::families::FamilyCheckpoint modernbert = testing::families::modernbert_checkpoint();
    modernbert.config["mask_token_id"] = 401;  // the byte-level tokenizer's <mask>
    write_with_tokenizer(dir + "/modernbert", modernbert, 16, 1.0);
    write_with_tokenizer(dir + "/llama4", testing::families::llama4_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/diffllama", testing::families::diffllama_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/qwen3_next", testing::families::qwen3_next_checkpoint(), 16, 1.0);
    write_with_tokenizer(dir + "/qwen3_5", testing::families::qwen3_5_checkpoint(), 16, 1.0);
    testing::families::write_gemma3_with_image_token(dir + "/gemma3", std::string(ATTNLAB_TEST_DATA) + "/tokenizers/bytelevel-roberta-prefix-space.json");
    // A 2-layer model for the reverse task, untrained: its vocabulary a … h and "|".
    const train::ModelFile file = testing::untrained_model_file(5);
    std::string error;
    if (!train::save_model_file(dir + "/model.json", file, &error)) {
        std::cerr << error << "\n";
        return 1;
    }
    return 0;
}

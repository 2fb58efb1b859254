// Hand-written matchers for the pre-tokenizer regexes that real tokenizer.json files use
// (GPT-2 / ByteLevel, Llama 3, Qwen2, Mistral Nemo "tekken"). Each matcher reproduces the
// leftmost-first, backtracking semantics of the Oniguruma pattern it stands for.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hfstatic::tokenizer {

enum class SplitPattern {
  kGpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kLlama3,  // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,   // as Llama 3 with \p{N} (single digits)
  kNemo,    // case-aware letters, single digits, [\r\n/]* after punctuation
};

// Maps a regex string from tokenizer.json to a built-in matcher; nullopt when unknown.
std::optional<SplitPattern> recognize_split_regex(std::string_view regex);

// The GPT-2 pattern source, as used by ByteLevel with use_regex = true.
const char* gpt2_regex();

// Appends the byte ranges [begin, end) of every match in `text` (valid UTF-8), in order.
// \s is Oniguruma's (Unicode White_Space); js_space selects JavaScript's \s (no U+0085, adds
// U+FEFF), which is what the reference uses for ByteLevel's built-in GPT-2 pattern.
void find_pattern_matches(SplitPattern pattern, std::string_view text, std::vector<std::pair<size_t, size_t>>& matches,
                          bool js_space = false);

}  // namespace hfstatic::tokenizer

// Perplexity of a text as llama.cpp's llama-perplexity measures it, with memory bounded whatever
// the text's size: the text is read and tokenized in chunks, and windows of ctx tokens are scored
// as they fill.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hfstatic {

class IOManager;
class ThreadPool;

// Where a chunk of `text` may end (its length), the rest of the text following in the next one:
// before a space with a non-space byte on each side, where byte-level BPE pre-tokenizers
// (GPT-2's, Llama 3's, Qwen's; with or without a prefix space) and Metaspace split anyway, so
// that the chunks' tokens are the whole text's. Without such a space: after a newline followed
// by a non-space (the same for those without a prefix space); without either: at the last UTF-8
// character boundary. The last such place of `text` (never its end, whose next byte is unknown);
// 0 when `text` has no character boundary past its start.
size_t chunk_cut(std::string_view text);

// A text file read chunk by chunk, each about chunk_bytes long and cut by chunk_cut.
class TextChunks {
 public:
  explicit TextChunks(const std::string& path, size_t chunk_bytes = size_t(1) << 20);
  TextChunks(const TextChunks&) = delete;
  TextChunks& operator=(const TextChunks&) = delete;
  ~TextChunks();

  // The next chunk into `chunk`; false at the end of the file. Throws Error on a read error.
  bool next(std::string& chunk);
  uint64_t size() const { return size_; }          // the file's size in bytes
  uint64_t consumed() const { return consumed_; }  // bytes handed out as chunks so far

 private:
  std::string path_;
  size_t chunk_bytes_;
  int fd_ = -1;
  uint64_t size_ = 0, consumed_ = 0;
  bool eof_ = false;
  std::string buffer_;  // read, not yet handed out
};

// The running sums of the scored tokens' negative log-likelihoods.
struct NllSums {
  double sum = 0, sum_squares = 0;
  int64_t count = 0;    // tokens scored
  int64_t windows = 0;  // windows scored
  double mean() const { return sum / double(count); }
  // The standard error of the mean NLL (0 for one token).
  double standard_error() const;
};

// Consecutive windows of ctx tokens of a token stream, each fed from position 0 with every
// logits row computed (the IOManager's all-logits mode is switched on) and each of its tokens
// after the first scored by the row before it. A window is scored as soon as it is full; the last,
// shorter one by finish() when it has two tokens.
class PerplexityWindows {
 public:
  PerplexityWindows(IOManager& io, int64_t ctx, ThreadPool* pool, std::function<void()> on_window = {});

  void add(std::span<const int32_t> tokens);  // throws Error when a step fails
  void finish();
  const NllSums& sums() const { return sums_; }
  int64_t tokens() const { return tokens_; }  // tokens added

 private:
  void score(std::span<const int64_t> window);

  IOManager& io_;
  int64_t ctx_;
  ThreadPool* pool_;
  std::function<void()> on_window_;
  std::vector<int64_t> pending_;  // fewer than ctx tokens between add() calls
  NllSums sums_;
  int64_t tokens_ = 0;
};

}  // namespace hfstatic

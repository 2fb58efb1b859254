#include "runner/perplexity.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "io/io_manager.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// The last i in [1, text.size() - 1) where text[i] is `c` between two non-space bytes; 0 if none.
size_t last_lone(std::string_view text, char c) {
  for (size_t i = text.size() < 2 ? 0 : text.size() - 2; i >= 1; --i)
    if (text[i] == c && !is_space(text[i - 1]) && !is_space(text[i + 1])) return i;
  return 0;
}

// -log softmax(logits)[target], in double.
double nll(const float* logits, int64_t vocab, int64_t target) {
  float max = logits[0];
  for (int64_t i = 1; i < vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(double(logits[i]) - double(max));
  return std::log(sum) + double(max) - double(logits[target]);
}

}  // namespace

size_t chunk_cut(std::string_view text) {
  if (size_t space = last_lone(text, ' ')) return space;
  if (size_t newline = last_lone(text, '\n')) return newline + 1;
  for (size_t i = text.size() - (text.empty() ? 0 : 1); i >= 1; --i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) return i;
  return 0;
}

TextChunks::TextChunks(const std::string& path, size_t chunk_bytes)
    : path_(path), chunk_bytes_(std::max<size_t>(chunk_bytes, 1)) {
  fd_ = open_regular_file(path, &size_);
}

TextChunks::~TextChunks() { ::close(fd_); }

bool TextChunks::next(std::string& chunk) {
  while (!eof_ && buffer_.size() < chunk_bytes_) {
    const size_t have = buffer_.size();
    buffer_.resize(chunk_bytes_);
    const ssize_t n = ::read(fd_, buffer_.data() + have, chunk_bytes_ - have);
    buffer_.resize(have + size_t(std::max<ssize_t>(n, 0)));
    if (n < 0 && errno != EINTR) fail(path_, ": read failed: ", std::strerror(errno));
    if (n == 0) eof_ = true;
  }
  if (buffer_.empty()) return false;
  size_t cut = eof_ ? 0 : chunk_cut(buffer_);
  if (cut == 0) cut = buffer_.size();
  chunk.assign(buffer_, 0, cut);
  buffer_.erase(0, cut);
  consumed_ += cut;
  return true;
}

double NllSums::standard_error() const {
  if (count < 2) return 0.0;
  const double n = double(count), m = mean();
  return std::sqrt(std::max(0.0, sum_squares / n - m * m) / (n - 1));
}

PerplexityWindows::PerplexityWindows(IOManager& io, int64_t ctx, ThreadPool* pool, std::function<void()> on_window)
    : io_(io), ctx_(ctx), pool_(pool), on_window_(std::move(on_window)) {
  if (ctx_ < 2) fail("perplexity windows need at least 2 tokens, not ", ctx_);
  io_.set_all_logits(true);
}

void PerplexityWindows::add(std::span<const int32_t> tokens) {
  pending_.insert(pending_.end(), tokens.begin(), tokens.end());
  tokens_ += int64_t(tokens.size());
  size_t begin = 0;
  for (; pending_.size() - begin >= size_t(ctx_); begin += size_t(ctx_))
    score(std::span(pending_).subspan(begin, size_t(ctx_)));
  pending_.erase(pending_.begin(), pending_.begin() + ptrdiff_t(begin));
}

void PerplexityWindows::finish() {
  if (pending_.size() >= 2) score(pending_);
  pending_.clear();
}

void PerplexityWindows::score(std::span<const int64_t> window) {
  const int64_t vocab = io_.model().vocab_size;
  io_.reset();
  for (const Step& step : io_.plan(0, window.size())) {
    const Status status = io_.step(step.kind, step.start_pos, window.subspan(step.begin, step.count), pool_);
    if (!status.ok()) fail("step at position ", step.start_pos, " failed: ", status.message());
    for (size_t r = 0; r < step.count && step.begin + r + 1 < window.size(); ++r) {
      const double v = nll(io_.row_logits(int64_t(r)).data(), vocab, window[step.begin + r + 1]);
      sums_.sum += v, sums_.sum_squares += v * v, ++sums_.count;
    }
  }
  ++sums_.windows;
  if (on_window_) on_window_();
}

}  // namespace hfstatic

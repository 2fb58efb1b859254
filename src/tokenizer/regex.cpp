// The Pike VM of Regex (regex.h): every thread advances one code point at a time, in priority
// order, so the first thread to reach Match is Oniguruma's leftmost-first match; lower-priority
// threads are cut there. Lookaheads run an anchored sub-search at their position.
#include "tokenizer/regex.h"

#include "tokenizer/regex_program.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hfstatic::tokenizer {
namespace {

using Text = unicode::CodePoints;

// Program counters with the start position of the thread that reached them, in insertion order.
class ThreadList {
 public:
  void resize(size_t size) {
    sparse_.assign(size, 0);
    dense_.resize(size);
    start_.resize(size);
    count_ = 0;
  }
  bool contains(int32_t pc) const {
    const uint32_t i = sparse_[static_cast<size_t>(pc)];
    return i < count_ && dense_[i] == pc;
  }
  void insert(int32_t pc, size_t start) {
    sparse_[static_cast<size_t>(pc)] = count_;
    dense_[count_] = pc;
    start_[count_] = start;
    ++count_;
  }
  void clear() { count_ = 0; }
  uint32_t size() const { return count_; }
  int32_t pc(uint32_t i) const { return dense_[i]; }
  size_t start(uint32_t i) const { return start_[i]; }

 private:
  std::vector<uint32_t> sparse_;
  std::vector<int32_t> dense_;
  std::vector<size_t> start_;
  uint32_t count_ = 0;
};

class Vm {
 public:
  Vm(const Regex::Program& program, const std::vector<Inst>& code, const Text& text, uint64_t& steps, uint64_t budget,
     const std::string& pattern, int depth)
      : program_(program), code_(code), text_(text), steps_(steps), budget_(budget), pattern_(pattern), depth_(depth) {
    current_.resize(code.size());
    next_.resize(code.size());
  }

  // The leftmost-first match starting at `from` or later (only at `from` when anchored).
  bool search(size_t from, bool anchored, size_t& match_start, size_t& match_end) {
    current_.clear();
    bool matched = false;
    const size_t n = text_.n;
    for (size_t pos = from; pos <= n; ++pos) {
      if (!matched && (!anchored || pos == from)) add_start(pos);
      if (current_.size() == 0) {
        if (matched || anchored) break;
        continue;
      }
      next_.clear();
      const char32_t c = pos < n ? text_.cp[pos] : 0;
      for (uint32_t i = 0; i < current_.size(); ++i) {
        const Inst& inst = code_[static_cast<size_t>(current_.pc(i))];
        bool advance = false;
        switch (inst.op) {
          case Op::kMatch:
            matched = true;
            match_start = current_.start(i);
            match_end = pos;
            i = current_.size();  // cut the lower-priority threads
            continue;
          case Op::kChar: advance = pos < n && c == inst.cp; break;
          case Op::kClass: advance = pos < n && program_.classes[static_cast<size_t>(inst.x)].matches(c); break;
          case Op::kAny: advance = pos < n && c != '\n'; break;
          default: continue;
        }
        if (advance) add(next_, current_.pc(i) + 1, pos + 1, current_.start(i));
      }
      std::swap(current_, next_);
    }
    return matched;
  }

 private:
  void count_step() {
    if (++steps_ > budget_)
      fail("regex \"", pattern_, "\": step budget of ", budget_, " exhausted on a text of ", text_.n, " characters");
  }

  bool assertion_holds(Assertion a, size_t pos) const {
    const size_t n = text_.n;
    switch (a) {
      case Assertion::kLineStart: return pos == 0 || text_.cp[pos - 1] == '\n';
      case Assertion::kLineEnd: return pos == n || text_.cp[pos] == '\n';
      case Assertion::kTextStart: return pos == 0;
      case Assertion::kTextEnd: return pos == n;
      case Assertion::kTextEndNewline: return pos == n || (pos + 1 == n && text_.cp[pos] == '\n');
      case Assertion::kWordBoundary:
      case Assertion::kNotWordBoundary: {
        const bool before = pos > 0 && is_word_char(text_.cp[pos - 1]);
        const bool after = pos < n && is_word_char(text_.cp[pos]);
        return (before != after) == (a == Assertion::kWordBoundary);
      }
    }
    return false;
  }

  bool lookahead_matches(int32_t index, size_t pos) {
    const std::vector<Inst>& body = program_.code[static_cast<size_t>(index)];
    // The common single-character bodies, as in \s+(?!\S).
    if (body.size() == 2 && body[1].op == Op::kMatch) {
      if (body[0].op == Op::kClass)
        return pos < text_.n && program_.classes[static_cast<size_t>(body[0].x)].matches(text_.cp[pos]);
      if (body[0].op == Op::kChar) return pos < text_.n && text_.cp[pos] == body[0].cp;
    }
    if (depth_ >= 8) fail("regex \"", pattern_, "\": lookaheads nested deeper than 8");
    Vm sub(program_, body, text_, steps_, budget_, pattern_, depth_ + 1);
    size_t s = 0, e = 0;
    return sub.search(pos, true, s, e);
  }

  // A new thread at `pos`, with the lowest priority. A pc already in the list has its whole
  // closure there too, so the precomputed start closure only needs the pcs not yet present.
  void add_start(size_t pos) {
    if (&code_ != &program_.code[0] || !program_.start_closure_fixed) {
      add(current_, 0, pos, pos);
      return;
    }
    for (int32_t pc : program_.start_closure) {
      if (current_.contains(pc)) continue;
      count_step();
      current_.insert(pc, pos);
    }
  }

  // Adds pc and everything reachable from it without consuming a character, in priority order.
  void add(ThreadList& list, int32_t pc, size_t pos, size_t start) {
    stack_.clear();
    stack_.push_back(pc);
    while (!stack_.empty()) {
      const int32_t p = stack_.back();
      stack_.pop_back();
      if (list.contains(p)) continue;
      count_step();
      list.insert(p, start);
      const Inst& inst = code_[static_cast<size_t>(p)];
      switch (inst.op) {
        case Op::kJmp: stack_.push_back(inst.x); break;
        case Op::kSplit:
          stack_.push_back(inst.y);
          stack_.push_back(inst.x);
          break;
        case Op::kAssert:
          if (assertion_holds(inst.assertion, pos)) stack_.push_back(p + 1);
          break;
        case Op::kLookahead:
          if (lookahead_matches(inst.x, pos) != inst.negative) stack_.push_back(p + 1);
          break;
        default: break;
      }
    }
  }

  const Regex::Program& program_;
  const std::vector<Inst>& code_;
  const Text& text_;
  uint64_t& steps_;
  uint64_t budget_;
  const std::string& pattern_;
  int depth_;
  ThreadList current_, next_;
  std::vector<int32_t> stack_;
};

// Far above what the patterns of real files take (a few dozen steps per character), and bounded
// by the text length times the program size, so hostile patterns or texts fail instead of hanging.
uint64_t step_budget(size_t chars, size_t program_size) {
  return 1000000 + static_cast<uint64_t>(chars + 1) * std::min<uint64_t>(2000, 16 * program_size);
}

}  // namespace

Regex::Regex(std::string_view pattern) : pattern_(pattern), program_(std::make_unique<Program>()) {
  compile_regex(pattern, *program_);
}
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;
Regex::~Regex() = default;

void Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  thread_local Text t;
  t.load(text);
  uint64_t steps = 0;
  Vm vm(*program_, program_->code[0], t, steps, step_budget(t.n, program_->code[0].size()), pattern_, 0);
  size_t pos = 0;
  while (pos < t.n) {
    size_t s = 0, e = 0;
    if (!vm.search(pos, false, s, e)) break;
    if (e == s) {  // an empty match: the next search starts one character later
      pos = s + 1;
      continue;
    }
    matches.emplace_back(t.offset[s], t.offset[e]);
    pos = e;
  }
}

bool Regex::replace_all(std::string_view text, std::string_view content, std::string& out, size_t limit) const {
  std::vector<std::pair<size_t, size_t>> matches;
  find_all(text, matches);
  out.clear();
  size_t pos = 0;
  for (const auto& [b, e] : matches) {
    if (out.size() + (b - pos) + content.size() > limit) return false;
    out.append(text.substr(pos, b - pos));
    out.append(content);
    pos = e;
  }
  if (out.size() + (text.size() - pos) > limit) return false;
  out.append(text.substr(pos));
  return true;
}

}  // namespace hfstatic::tokenizer

// Prefix reuse: what each slot's cache holds, and how much of a new prompt it can skip.
//
// A slot remembers the tokens at the start of its cache that a cold run of any prompt beginning
// with them would compute the same way, bit for bit: positions fed by a prefill step where a
// prefill from position 0 would prefill them too (a prefill row does not depend on where its
// chunk starts), and positions both feed with a decode step (near the end of the context, where
// a padded prefill no longer fits). Sampled tokens are fed by decode steps, whose rows differ
// from prefill rows in the last bits, so a reply is reused only once a later prompt has
// prefilled it. A request continues from the longest exact prefix it shares; the tokens past it
// are fed from that position (the counters and masks are written from start_pos, so whatever
// the cache held past it is never read), and the result equals a cold run's.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace hfstatic {
class IOManager;
class Runner;
}  // namespace hfstatic

namespace hfstatic::server {

class SlotHistory {
 public:
  // The tokens of the prompt this history can serve from its cache (at most prompt.size() - 1:
  // the last prompt token is always fed again, for the logits to sample from).
  size_t shared(std::span<const int64_t> prompt) const;
  // Makes `runner` (whose cache this history describes) ready to feed `prompt`: rewinds it to the
  // longest exact prefix the prompt may reuse, resets it when there is none. Returns the tokens
  // reused; the runner is then fed prompt[reused:].
  size_t prepare(Runner& runner, std::span<const int64_t> prompt);
  // After a generation over `prompt` (fed after prepare()): records what the runner's cache
  // holds exactly (the prompt, and the sampled tokens fed where a cold run decodes too).
  void update(Runner& runner, std::span<const int64_t> prompt);
  // Forgets everything (after a failed generation, whose cache is not known).
  void clear() { tokens_.clear(); }
  const std::vector<int64_t>& tokens() const { return tokens_; }

 private:
  std::vector<int64_t> tokens_;  // the cache's exact prefix
};

// Whether feeding positions [from, n) from `from` runs the same kind of step at each position as
// feeding [0, n) from position 0.
bool same_plan_as_cold(const IOManager& io, size_t from, size_t n);

}  // namespace hfstatic::server

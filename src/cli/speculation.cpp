#include "cli/speculation.h"

#include "cli/args.h"
#include "cli/command.h"

namespace hfstatic::cli {

Speculation speculation_flags(const Args& args) {
  Speculation s;
  s.lookup = args.get_int(kLookupFlag, 0, 1, 64);
  s.draft = args.get(kDraftFlag);
  if (s.lookup > 0 && s.draft) throw UsageError{"give only one of --lookup and --draft"};
  if (args.has(kDraftMaxFlag) && !s.draft) throw UsageError{"flag --draft-max: only with --draft FILE"};
  s.draft_max = args.get_int(kDraftMaxFlag, 4, 1, 64);
  return s;
}

std::unique_ptr<Drafter> make_drafter(const Speculation& s, const Runner& target, const std::string& target_name,
                                      const RunnerOptions& options) {
  if (s.lookup > 0) return std::make_unique<PromptLookup>();
  if (!s.draft) return nullptr;
  return std::make_unique<DraftModel>(Runner::load(*s.draft, options), target, *s.draft, target_name);
}

}  // namespace hfstatic::cli

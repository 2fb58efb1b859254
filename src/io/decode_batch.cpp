// IOManager::decode_batch: one decode step of several sequences of a program together.
#include <vector>

#include "executor/method.h"
#include "io/io_manager.h"

namespace hfstatic {

Status IOManager::decode_batch(std::span<IOManager* const> ios, std::span<const int64_t> positions,
                               std::span<const int64_t> tokens, ThreadPool* pool) {
  if (positions.size() != ios.size() || tokens.size() != ios.size())
    fail("decode_batch: ", ios.size(), " managers, ", positions.size(), " positions and ", tokens.size(),
         " tokens; each manager takes one of each");
  std::vector<Execution*> batch;
  batch.reserve(ios.size());
  for (size_t i = 0; i < ios.size(); ++i) {
    Execution* exec = ios[i] ? ios[i]->decode_execution() : nullptr;
    if (!exec) fail("decode_batch: manager ", i, " is null, not loaded, or cannot decode in a batch");
    const ModelInfo& info = ios[i]->model();
    if (positions[i] < 0 || positions[i] >= info.max_context)
      fail("decode_batch: manager ", i, ": decode step at start_pos ", positions[i], " does not fit max_context ",
           info.max_context);
    if (tokens[i] < 0 || tokens[i] >= info.vocab_size)
      fail("decode_batch: manager ", i, ": token id ", tokens[i], " is outside the vocabulary [0, ", info.vocab_size,
           ")");
    batch.push_back(exec);
  }
  if (std::string problem = Execution::batch_problem(batch); !problem.empty())
    fail("decode_batch: ", problem, " (execution i is manager i's)");
  for (size_t i = 0; i < ios.size(); ++i) {
    ios[i]->prepare(StepKind::Decode, positions[i], tokens.subspan(i, 1));
    ios[i]->bind();
  }
  const Status s = Execution::run_batch(batch, pool);
  for (IOManager* io : ios) io->decode_ran(s);
  return s;
}

}  // namespace hfstatic

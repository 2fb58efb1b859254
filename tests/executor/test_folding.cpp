// Folding an rms_norm or silu_mul into the linear nodes after it (Method::Step) changes no bit
// of what a model computes, nor does sharing the work out to two threads: the tiny presets
// exported and run with folding on and off, every prompt row's logits and a few decode steps,
// on one and two threads.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "executor/method.h"
#include "format/program.h"
#include "io/hf_static_io_manager.h"
#include "kernels/thread_pool.h"
#include "test_support.h"

namespace hfstatic {
namespace {

struct Logits {
  std::vector<float> prompt, decode;
  size_t folded_prefill = 0, folded_decode = 0;
};

Logits run(std::shared_ptr<const Program> program, bool fold, int threads) {
  RuntimeOptions options;
  options.fold_ops = fold;
  auto io = IOManagerRegistry::instance().load(program, HeapAllocator::instance(), options);
  auto& hf = dynamic_cast<HfStaticIOManager&>(*io);
  hf.set_all_logits(true);
  ThreadPool pool(threads);
  Logits out;
  out.folded_prefill = hf.execution(StepKind::Prefill).method().num_folded_steps();
  out.folded_decode = hf.execution(StepKind::Decode).method().num_folded_steps();
  const int64_t V = io->model().vocab_size;
  // 70 tokens: a full prefill chunk of 64 (the matrix multiply, the cache writes shared out to
  // the threads), then a padded one of 6.
  std::vector<int64_t> prompt(70);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int64_t(i * 41 + 7) % V;
  for (const Step& s : io->plan(0, prompt.size())) {
    EXPECT_TRUE(io->step(s.kind, s.start_pos, std::span(prompt).subspan(s.begin, s.count), &pool).ok());
    const float* all = static_cast<const float*>(hf.execution(StepKind::Prefill).output_data(3 * io->model().n_layers));
    out.prompt.insert(out.prompt.end(), all, all + s.count * V);
  }
  for (int64_t pos = int64_t(prompt.size()); pos < int64_t(prompt.size()) + 4; ++pos) {  // matrix-vector
    const std::vector<int64_t> one = {(pos * 37) % V};
    EXPECT_TRUE(io->step(StepKind::Decode, pos, one, &pool).ok());
    out.decode.insert(out.decode.end(), io->logits().begin(), io->logits().end());
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Folding, LogitsAreBitForBitTheSameFoldedOrNotOnOneOrTwoThreads) {
  test::TempDir dir("folding");
  for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3"}) {
    SCOPED_TRACE(preset);
    GraphOptions g;
    g.prefill_len = 64;
    g.max_context = 128;
    auto program = Program::load(test::export_to(test::cached_checkpoint(preset, 3), dir.file(cat(preset, ".hfs")), g));
    const int64_t layers = program->spec().metadata.value("n_layers", int64_t(0));
    const Logits one_thread = run(program, true, 1);
    for (int threads : {1, 2}) {
      SCOPED_TRACE(cat(threads, " threads"));
      const Logits off = run(program, false, threads), on = run(program, true, threads);
      // Each value is computed by one thread in the same order whatever the split.
      EXPECT_TRUE(same_bits(on.prompt, one_thread.prompt));
      EXPECT_TRUE(same_bits(on.decode, one_thread.decode));
      EXPECT_EQ(off.folded_prefill, 0u);
      // Per layer: the two norms into q/k/v and gate/up, silu_mul into down; the final norm.
      EXPECT_EQ(on.folded_prefill, size_t(3 * layers + 1));
      EXPECT_EQ(on.folded_decode, size_t(3 * layers + 1));
      ASSERT_FALSE(on.prompt.empty());
      EXPECT_TRUE(same_bits(on.prompt, off.prompt));
      EXPECT_TRUE(same_bits(on.decode, off.decode));
    }
  }
}

}  // namespace
}  // namespace hfstatic

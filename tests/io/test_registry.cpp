// IOManagerRegistry with a second, test-only contract: selection by name and version, no
// silent replacement, unknown pairs refused with every supported pair listed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "format/program.h"
#include "io/hf_static_io_manager.h"
#include "io/io_manager.h"
#include "test_support.h"

namespace hfstatic {
namespace {

using testing::ElementsAre;
using testing::HasSubstr;

// Loads anything and runs nothing; `tag` tells which factory made it.
class TestOnlyIOManager : public IOManager {
 public:
  explicit TestOnlyIOManager(int tag) : tag(tag) {}
  void load(std::shared_ptr<const Program> program, BufferAllocator&, const RuntimeOptions&) override {
    loaded = std::move(program);
  }
  const ModelInfo& model() const override { return info_; }
  void reset() override {}
  std::vector<Step> plan(int64_t, size_t) const override { return {}; }
  std::span<const float> logits() const override { return {}; }

  const int tag;
  std::shared_ptr<const Program> loaded;

 protected:
  void prepare(StepKind, int64_t, std::span<const int64_t>) override {}
  void bind() override {}
  Status run(ThreadPool*) override { return {}; }

 private:
  ModelInfo info_;
};

IOContract test_only_contract(int tag, int64_t version = 7) {
  return {"test_only", version, [tag] { return std::make_unique<TestOnlyIOManager>(tag); },
          [](const Program& p) {
            return std::vector<std::string>{cat("test_only: ", p.metadata().value("problem", "none"))};
          },
          [](const Program&) { return std::string("a test program"); }};
}

class Registry : public testing::Test {
 protected:
  void SetUp() override {
    register_builtin_contracts(registry);
    registry.add(test_only_contract(1));
  }
  // A one-method program whose metadata names `contract` and `version`.
  std::shared_ptr<const Program> program(const std::string& contract, int64_t version) {
    ProgramSpec spec;
    spec.metadata = {{"io_contract", contract}, {"version", version}, {"problem", "seen"}};
    MethodSpec m;
    m.name = "m";
    m.inputs.push_back({"x", DType::F32, {1, 2}});
    m.values.push_back({"y", DType::F32, {1, 2}});
    m.nodes.push_back({"copy", {"x"}, {"y"}, nlohmann::json::object()});
    m.outputs.push_back({"y", "y", OutputMemory::Planned});
    spec.methods.push_back(m);
    const std::string path = dir.file(cat(contract, version, ".hfs"));
    ProgramWriter(spec).write(path);
    return Program::load(path);
  }
  std::shared_ptr<const Program> hf_static_program() {
    GraphOptions g;
    g.prefill_len = 4;
    g.max_context = 16;
    return Program::load(test::export_to(test::cached_checkpoint("tiny", 3), dir.file("hf.hfs"), g));
  }

  test::TempDir dir{"registry"};
  IOManagerRegistry registry;
};

TEST_F(Registry, SelectsTheContractByNameAndVersion) {
  EXPECT_THAT(registry.supported(), ElementsAre("hf_static v1", "hf_static v2", "test_only v7"));
  auto test_program = program("test_only", 7);
  auto io = registry.load(test_program);
  auto* test_io = dynamic_cast<TestOnlyIOManager*>(io.get());
  ASSERT_NE(test_io, nullptr);
  EXPECT_EQ(test_io->loaded, test_program);
  EXPECT_THAT(registry.validate(*test_program), ElementsAre("test_only: seen"));
  EXPECT_EQ(registry.describe(*test_program), "test_only v7 program (a test program)");

  auto hf = hf_static_program();
  EXPECT_NE(dynamic_cast<HfStaticIOManager*>(registry.load(hf).get()), nullptr);
  EXPECT_THAT(registry.validate(*hf), testing::IsEmpty());
  EXPECT_EQ(registry.describe(*hf), "hf_static v1 program (2 layers, max_context 16, prefill_len 4, float32 cache)");
}

TEST_F(Registry, AnExistingEntryCannotBeReplaced) {
  EXPECT_THAT(test::error_of([&] { registry.add(test_only_contract(2)); }),
              HasSubstr("I/O contract 'test_only' version 7 is already registered"));
  auto io = registry.load(program("test_only", 7));
  EXPECT_EQ(dynamic_cast<TestOnlyIOManager&>(*io).tag, 1) << "the first registration was replaced";
  EXPECT_THAT(registry.supported(), ElementsAre("hf_static v1", "hf_static v2", "test_only v7"));
  // Another version of the same contract is a pair of its own.
  registry.add(test_only_contract(3, 8));
  EXPECT_EQ(dynamic_cast<TestOnlyIOManager&>(*registry.load(program("test_only", 8))).tag, 3);
  EXPECT_THROW(register_builtin_contracts(registry), Error);
}

TEST_F(Registry, AnUnknownPairListsEverySupportedOne) {
  const std::string list = "(supported: hf_static v1, hf_static v2, test_only v7)";
  for (const auto& [contract, version] :
       std::vector<std::pair<std::string, int64_t>>{{"test_only", 6}, {"hf_static", 3}, {"other", 1}}) {
    auto p = program(contract, version);
    const std::string expected = cat("I/O contract '", contract, "' version ", version, " is not supported ", list);
    EXPECT_THAT(registry.validate(*p), ElementsAre(expected));
    EXPECT_EQ(test::error_of([&] { registry.load(p); }), cat(p->path(), ": ", expected));
    EXPECT_THAT(test::error_of([&] { registry.describe(*p); }), HasSubstr(expected));
  }
}

TEST_F(Registry, TheSharedInstanceHoldsTheBuiltInContractsOnly) {
  EXPECT_THAT(IOManagerRegistry::instance().supported(), ElementsAre("hf_static v1", "hf_static v2"));
  auto p = program("test_only", 7);
  EXPECT_THAT(IOManagerRegistry::instance().validate(*p),
              ElementsAre(HasSubstr("(supported: hf_static v1, hf_static v2)")));
}

}  // namespace
}  // namespace hfstatic

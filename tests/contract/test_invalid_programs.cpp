// Every invalid program of the corpus fails to load with the specific violation it was made
// with, naming the key, or the method, index, role, expected and actual dtype and shape.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fixtures.h"
#include "io/hf_static_io_manager.h"
#include "test_support.h"

namespace hfstatic::contract {
namespace {

using testing::Contains;
using testing::HasSubstr;

std::vector<std::string> invalid_names() {
  std::vector<std::string> names;
  for (const auto& f : invalid_fixtures()) names.push_back(f.name);
  return names;
}

std::string param_name(const testing::TestParamInfo<std::string>& info) { return info.param; }

class InvalidProgram : public testing::TestWithParam<std::string> {
 protected:
  const InvalidFixture& fixture() const { return invalid_fixture(GetParam()); }
};

TEST_P(InvalidProgram, ViolationsNameTheProblem) {
  const InvalidFixture& f = fixture();
  auto program = Program::load(fixture_path(f));
  const std::vector<std::string> v = hf_static_v1_violations(*program);
  ASSERT_FALSE(v.empty());
  for (const auto& e : f.expected) EXPECT_THAT(v, Contains(e));
}

TEST_P(InvalidProgram, RegistryLoadFailsWithTheSpecificError) {
  const InvalidFixture& f = fixture();
  const std::string path = fixture_path(f);
  auto program = Program::load(path);
  try {
    IOManagerRegistry::instance().load(program);
    FAIL() << "loaded an invalid program";
  } catch (const ContractError& e) {
    ASSERT_EQ(f.path, LoadPath::Contract) << "expected the registry to refuse the contract: " << e.what();
    for (const auto& x : f.expected) {
      EXPECT_THAT(e.violations(), Contains(x));
      EXPECT_THAT(e.what(), HasSubstr("\n  " + x));
    }
    EXPECT_THAT(e.what(), HasSubstr(path + ": program violates hf_static v1 ("));
  } catch (const Error& e) {
    ASSERT_EQ(f.path, LoadPath::Registry) << "not a ContractError: " << e.what();
    EXPECT_THAT(e.what(), HasSubstr(f.registry_error));
    EXPECT_THAT(e.what(), HasSubstr("hf_static v1"));
  }
}

// Loading with the hf_static IOManager directly (no registry) reports the same violations.
TEST_P(InvalidProgram, DirectLoadThrowsContractError) {
  const InvalidFixture& f = fixture();
  auto program = Program::load(fixture_path(f));
  HfStaticIOManager io;
  try {
    io.load(program, HeapAllocator::instance());
    FAIL() << "loaded an invalid program";
  } catch (const ContractError& e) {
    for (const auto& x : f.expected) EXPECT_THAT(e.violations(), Contains(x));
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, InvalidProgram, testing::ValuesIn(invalid_names()), param_name);

TEST(InvalidCorpus, HasEveryKindOfFixture) {
  EXPECT_GE(invalid_fixtures().size(), 40u);
  size_t equal_bytes = 0, registry = 0;
  for (const auto& f : invalid_fixtures()) {
    equal_bytes += f.equal_bytes;
    registry += f.path == LoadPath::Registry;
  }
  EXPECT_GE(equal_bytes, 10u);
  EXPECT_GE(registry, 4u);
}

// The contract check runs before graph validation: a program whose graph is inconsistent too
// still reports the contract violation, not a graph error.
TEST(InvalidCorpus, ContractCheckComesBeforeTheGraphCheck) {
  const InvalidFixture& f = invalid_fixture("k_cache_float16_equal_bytes");
  auto program = Program::load(fixture_path(f));
  EXPECT_THROW(Method::load(program, "prefill"), Error);  // the graph is inconsistent as well
  EXPECT_THROW(IOManagerRegistry::instance().load(program), ContractError);
}

// A violation per line: a program with several problems lists them all.
TEST(InvalidCorpus, EveryViolationIsListed) {
  const InvalidFixture& f = invalid_fixture("metadata_max_context_32");
  auto program = Program::load(fixture_path(f));
  try {
    IOManagerRegistry::instance().load(program);
    FAIL();
  } catch (const ContractError& e) {
    EXPECT_GT(e.violations().size(), 4u);
    EXPECT_THAT(e.what(), HasSubstr(cat("(", e.violations().size(), " problems)")));
    for (const auto& v : e.violations()) EXPECT_THAT(e.what(), HasSubstr("\n  " + v));
  }
}

// `hfstatic validate FILE`: every violation, exit status 1; 0 for a valid program.
bool have_validate_command() {
  test::CommandResult r = test::run_cli({"validate", "--help"});
  return r.err.find("unknown command") == std::string::npos && r.out.find("unknown command") == std::string::npos;
}

TEST_P(InvalidProgram, ValidateCommandListsEveryViolation) {
  if (!have_validate_command()) GTEST_SKIP() << "hfstatic has no validate command";
  const InvalidFixture& f = fixture();
  test::CommandResult r = test::run_cli({"validate", fixture_path(f)});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string all = r.out + r.err;
  if (f.path == LoadPath::Contract) {
    auto program = Program::load(fixture_path(f));
    for (const auto& v : hf_static_v1_violations(*program)) EXPECT_THAT(all, HasSubstr(v));
  } else {
    // Either the registry's refusal or the violation itself.
    EXPECT_THAT(all, testing::AnyOf(HasSubstr(f.registry_error), HasSubstr(f.expected.front())));
  }
}

TEST(ValidateCommand, AcceptsAValidProgram) {
  if (!have_validate_command()) GTEST_SKIP() << "hfstatic has no validate command";
  test::CommandResult r = test::run_cli({"validate", fixture_path(valid_fixtures().front())});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace hfstatic::contract

//===- IcuLibraryTest.cpp - Probing for ICU at run time -------------------===//
//
// lockstep/Text/IcuLibrary.h: which libicuuc is opened, and what is said
// when none is usable. The process's own ICU cannot be hidden from a test,
// so the probe is given lists of candidates; test/Text/icu-missing.test
// runs lockstep-run where ICU cannot be opened.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Text/IcuLibrary.h"

#include <gtest/gtest.h>

using namespace lockstep::text;

namespace {

TEST(IcuLibrary, CandidatesNewestFirstThenUnversioned) {
  std::vector<IcuCandidate> c = icuCandidates();
  ASSERT_EQ(c.size(), size_t(kIcuNewest - kIcuOldest + 2));
  EXPECT_EQ(c.front().file, "libicuuc.so." + std::to_string(kIcuNewest));
  EXPECT_EQ(c.front().suffixes, (std::vector<std::string>{"_" + std::to_string(kIcuNewest), ""}));
  EXPECT_EQ(c[c.size() - 2].file, "libicuuc.so." + std::to_string(kIcuOldest));
  EXPECT_EQ(c.back().file, "libicuuc.so");
  EXPECT_EQ(c.back().suffixes.front(), "");
  EXPECT_EQ(c.back().suffixes.size(), size_t(kIcuNewest - kIcuOldest + 2));
}

// The build machines have ICU (Debian 12: 72); the process finds the same.
TEST(IcuLibrary, ThisMachinesIcuIsFound) {
  std::string loaded, why;
  ASSERT_TRUE(probeIcu(icuCandidates(), loaded, why)) << why;
  EXPECT_EQ(loaded.rfind("libicuuc.so", 0), 0u) << loaded;
  ASSERT_TRUE(icuAvailable(why)) << why;
  EXPECT_EQ(icuLibraryName(), loaded);
}

TEST(IcuLibrary, NoneInstalledNamesWhatWasTried) {
  std::string loaded, why;
  std::vector<IcuCandidate> none = {{"libicuuc-absent.so.99", {"_99"}},
                                    {"libicuuc-absent.so.98", {"_98"}},
                                    {"libicuuc-absent.so", {""}}};
  EXPECT_FALSE(probeIcu(none, loaded, why));
  EXPECT_EQ(why, "not installed (tried libicuuc-absent.so.99 down to libicuuc-absent.so.98, and "
                 "libicuuc-absent.so)");
  EXPECT_TRUE(loaded.empty());
  EXPECT_FALSE(probeIcu({{"libicuuc-absent.so.1", {"_1"}}}, loaded, why));
  EXPECT_EQ(why, "not installed (tried libicuuc-absent.so.1)");
  EXPECT_FALSE(probeIcu({}, loaded, why));
  EXPECT_EQ(why, "not installed (no library to try)");
}

// A library that loads but is not ICU, or an ICU under a suffix it does not
// use: the first such failure is the reason, even when later candidates are
// simply absent.
TEST(IcuLibrary, ALibraryWithoutTheFunctionsIsNotUsable) {
  std::string loaded, why;
  EXPECT_FALSE(probeIcu({{"libm.so.6", {"_72", ""}}, {"libicuuc-absent.so", {""}}}, loaded, why));
  EXPECT_EQ(why, "not usable: libm.so.6 has no 'u_charType'");
  std::vector<IcuCandidate> found = icuCandidates();
  ASSERT_TRUE(probeIcu(found, loaded, why)) << why;
  EXPECT_FALSE(probeIcu({{loaded, {"_0"}}}, loaded, why));
  EXPECT_NE(why.find("has no 'u_charType_0'"), std::string::npos) << why;
}

// Later candidates are tried after a missing one.
TEST(IcuLibrary, FirstUsableCandidateWins) {
  std::string loaded, why;
  std::vector<IcuCandidate> c = {{"libicuuc-absent.so.99", {"_99"}}, {"libm.so.6", {""}}};
  for (const IcuCandidate &x : icuCandidates())
    c.push_back(x);
  ASSERT_TRUE(probeIcu(c, loaded, why)) << why;
  EXPECT_EQ(loaded, icuLibraryName());
}

} // namespace

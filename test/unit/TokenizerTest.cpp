//===- TokenizerTest.cpp - lockstep::text::Tokenizer on small files -------===//
//
// Hand-written tokenizer.json files. The expected ids and texts are what the
// `tokenizers` package (0.20.3) gives for the same files; test/Text compares
// the two at scale on trained tokenizers.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Text/Tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

using lockstep::text::Tokenizer;

namespace {

std::unique_ptr<Tokenizer> load(const std::string &json) {
  std::string error;
  auto t = Tokenizer::fromJson(json, error);
  EXPECT_TRUE(t) << error;
  return t;
}

using Ids = std::vector<int32_t>;

const char *kMergeOrder = R"({"model": {"type": "BPE",
  "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5},
  "merges": ["b c", "a b"]}})";

TEST(TokenizerTest, MergesByRankNotPosition) {
  auto t = load(kMergeOrder);
  ASSERT_TRUE(t);
  // "b c" has the lower rank, so it wins over "a b" although it is to the
  // right; "a bc" has no merge. Characters outside the vocabulary without an
  // unknown token are dropped.
  EXPECT_EQ(t->encode("abc", true), (Ids{0, 4}));
  EXPECT_EQ(t->encode("ab", true), (Ids{3}));
  EXPECT_EQ(t->encode("bca", true), (Ids{4, 0}));
  EXPECT_EQ(t->encode("\xC3\xA9" "a", true), (Ids{0}));
  EXPECT_EQ(t->encode("", true), (Ids{}));
  // Without a decoder, tokens are joined by spaces.
  EXPECT_EQ(t->decode({0, 4}, false), "a bc");
  EXPECT_EQ(t->vocabSize(), 6u);
  EXPECT_EQ(t->tokenId("bc"), 4);
  EXPECT_FALSE(t->tokenId("zz"));
  EXPECT_FALSE(t->bosId());
  EXPECT_FALSE(t->eosId());
}

TEST(TokenizerTest, IgnoreMergesTakesAWholeVocabularyPiece) {
  std::string json = kMergeOrder;
  json.insert(json.rfind('}') - 1, ", \"ignore_merges\": true");
  auto t = load(json);
  ASSERT_TRUE(t);
  // "abc" is in the vocabulary: one token, though merges would give a, bc.
  EXPECT_EQ(t->encode("abc", true), (Ids{5}));
  EXPECT_EQ(t->encode("abca", true), (Ids{0, 4, 0}));
  json.insert(json.rfind('}'), ", \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": "
                               "{\"String\": \"a\"}, \"behavior\": \"MergedWithNext\"}");
  t = load(json);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("abcabc", true), (Ids{5, 5}));
  EXPECT_EQ(t->encode("bcabcab", true), (Ids{4, 5, 3}));
}

const char *kFallback = R"({"model": {"type": "BPE",
  "vocab": {"<unk>": 0, "a": 1, "<0xC3>": 2, "<0xA9>": 3}, "merges": [],
  "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true},
  "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}})";

TEST(TokenizerTest, ByteFallbackAndFusedUnknown) {
  auto t = load(kFallback);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("a\xC3\xA9", true), (Ids{1, 2, 3}));
  // "x" has no byte tokens: unknown. Unknowns in a row fuse into one, and a
  // pending unknown goes after byte tokens that follow it.
  EXPECT_EQ(t->encode("abc", true), (Ids{1, 0}));
  EXPECT_EQ(t->encode("\xC3\xA9\xC3\xA9xa", true), (Ids{2, 3, 2, 3, 0, 1}));
  EXPECT_EQ(t->decode({2, 3, 2, 3, 0, 1}, false), "\xC3\xA9\xC3\xA9<unk>a");
  // A byte run that is not UTF-8 becomes one U+FFFD per byte.
  EXPECT_EQ(t->decode({2, 1, 3, 3, 2, 3}, false),
            "\xEF\xBF\xBD" "a" "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  // Ids that name no token are skipped.
  EXPECT_EQ(t->decode({1, 99, -5, 1}, false), "aa");
}

const char *kAdded = R"({"added_tokens": [
   {"id": 3, "content": "<x>", "single_word": false, "lstrip": true, "rstrip": true,
    "normalized": false, "special": true},
   {"id": 4, "content": "ya", "single_word": true, "lstrip": false, "rstrip": false,
    "normalized": false, "special": false}],
 "model": {"type": "BPE", "vocab": {"a": 0, "y": 1, " ": 2}, "merges": []},
 "post_processor": {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
              {"SpecialToken": {"id": "<x>", "type_id": 0}}],
   "pair": [], "special_tokens": {"<x>": {"id": "<x>", "ids": [3], "tokens": ["<x>"]}}}})";

TEST(TokenizerTest, AddedTokensStripAndSingleWord) {
  auto t = load(kAdded);
  ASSERT_TRUE(t);
  // lstrip/rstrip take the spaces around <x> into it.
  EXPECT_EQ(t->encode("a  <x>  a", true), (Ids{3, 0, 3, 0, 3}));
  EXPECT_EQ(t->encode("a  <x>  a", false), (Ids{0, 3, 0}));
  // "ya" matches only as a whole word.
  EXPECT_EQ(t->encode("ya yay ya", true), (Ids{3, 4, 2, 1, 0, 1, 2, 4, 3}));
  EXPECT_EQ(t->encode("aya ya", true), (Ids{3, 0, 1, 0, 2, 4, 3}));
  EXPECT_EQ(t->encode("", true), (Ids{3, 3}));
  EXPECT_EQ(t->decode({3, 4, 2, 1, 0, 1, 2, 4, 3}, true), "ya   y a y   ya");
  EXPECT_EQ(t->decode({3, 0, 3}, false), "<x> a <x>");
  EXPECT_EQ(t->bosId(), 3);
  EXPECT_EQ(t->eosId(), 3);
  EXPECT_TRUE(t->isSpecial(3));
  EXPECT_FALSE(t->isSpecial(4));
  EXPECT_EQ(t->vocabSize(), 5u);
}

const char *kByteLevel = R"({"model": {"type": "BPE",
  "vocab": {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3, "Ã": 4, "©": 5, "Ã©": 6, "ï": 7, "¿": 8, "½": 9},
  "merges": [["Ġ", "a"], ["Ã", "©"]]},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                    "use_regex": true},
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
              "use_regex": true}})";

TEST(TokenizerTest, InvalidUtf8InputIsRepairedFirst) {
  auto t = load(kByteLevel);
  ASSERT_TRUE(t);
  EXPECT_FALSE(Tokenizer::isValidUtf8("a\xFF"));
  EXPECT_TRUE(Tokenizer::isValidUtf8("a\xC3\xA9"));
  // "\xFF" becomes U+FFFD (EF BF BD = ï ¿ ½ at byte level); a truncated
  // sequence (E2 82) is one U+FFFD.
  EXPECT_EQ(t->encode("a\xFF", true), (Ids{0, 7, 8, 9}));
  EXPECT_EQ(t->encode("a\xE2\x82", true), (Ids{0, 7, 8, 9}));
  EXPECT_EQ(t->encode(" a\xC3\xA9", true), (Ids{3, 6}));
  EXPECT_EQ(t->decode({3, 6}, false), " a\xC3\xA9");
  // Half a character decodes to U+FFFD.
  EXPECT_EQ(t->decode({0, 4}, false), "a\xEF\xBF\xBD");
}

TEST(TokenizerTest, EveryTruncationOfAFileIsRefusedWithoutCrashing) {
  std::string full = kAdded;
  for (size_t n = 0; n < full.size(); ++n) {
    std::string error;
    auto t = Tokenizer::fromJson(full.substr(0, n), error);
    EXPECT_FALSE(t) << n;
    EXPECT_EQ(error.rfind("tokenizer.json: ", 0), 0u) << error;
  }
}

TEST(TokenizerTest, WrongTypesAreRefused) {
  const char *cases[] = {
      R"([])",
      R"({"model": []})",
      R"({"model": {"type": "BPE", "vocab": [], "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1]}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a"]}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "byte_fallback": 1}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": {}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{}]})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": 3})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "normalizer": {"type": "Replace", "pattern": {"Regex": 1}, "content": ""}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "pre_tokenizer": {"type": "Metaspace", "replacement": "ab"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "decoder": {"type": "Strip", "content": " ", "start": -1, "stop": 0}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
          "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}}]}})",
  };
  for (const char *c : cases) {
    std::string error;
    EXPECT_FALSE(Tokenizer::fromJson(c, error)) << c;
    EXPECT_EQ(error.rfind("tokenizer.json: ", 0), 0u) << c << " -> " << error;
  }
}

TEST(TokenizerTest, DeepNestingIsRefused) {
  for (const char *part : {"normalizer", "pre_tokenizer", "decoder", "post_processor"}) {
    const std::string key = std::string(part) == "normalizer"      ? "normalizers"
                            : std::string(part) == "pre_tokenizer" ? "pretokenizers"
                            : std::string(part) == "decoder"       ? "decoders"
                                                                   : "processors";
    std::string open, close;
    for (int i = 0; i < 100000; ++i) {
      open += "{\"type\": \"Sequence\", \"" + key + "\": [";
      close += "]}";
    }
    std::string json = "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"" +
                       std::string(part) + "\": " + open + close + "}";
    std::string error;
    EXPECT_FALSE(Tokenizer::fromJson(json, error)) << part;
    EXPECT_EQ(error, "tokenizer.json: " + std::string(part) + ": Sequences nested more than 64 deep");
  }
}

TEST(TokenizerTest, RandomBytesNeverCrash) {
  auto t = load(kAdded);
  auto b = load(kByteLevel);
  ASSERT_TRUE(t && b);
  std::mt19937 rng(19);
  for (int k = 0; k < 2000; ++k) {
    std::string s(rng() % 24, '\0');
    for (char &c : s)
      c = static_cast<char>(rng());
    for (const Tokenizer *tok : {t.get(), b.get()}) {
      Ids ids = tok->encode(s, true);
      std::string text = tok->decode(ids, false);
      EXPECT_TRUE(Tokenizer::isValidUtf8(text));
      Ids random;
      for (int n = rng() % 10; n > 0; --n)
        random.push_back(static_cast<int32_t>(rng() % 14) - 2);
      EXPECT_TRUE(Tokenizer::isValidUtf8(tok->decode(random, true)));
    }
  }
}

TEST(TokenizerTest, ThreadsShareOneTokenizer) {
  auto t = load(kByteLevel);
  ASSERT_TRUE(t);
  std::mt19937 rng(7);
  std::vector<std::string> texts(400);
  for (std::string &s : texts)
    for (int n = rng() % 40; n > 0; --n)
      s += " ab\xC3\xA9\xFFx"[rng() % 7];
  std::vector<Ids> want;
  for (const std::string &s : texts)
    want.push_back(t->encode(s, true));
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int round = 0; round < 5; ++round)
        for (size_t i = 0; i < texts.size(); ++i)
          bad[k] += t->encode(texts[i], true) != want[i] ||
                    t->decode(want[i], false) != t->decode(want[i], false);
    });
  for (std::thread &th : threads)
    th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

} // namespace

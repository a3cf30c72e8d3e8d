//===- PromptsTest.cpp - JSON-lines prompts -------------------------------===//
#include "lockstep/Harness/Prompts.h"

#include <gtest/gtest.h>

using namespace lockstep::rt;

TEST(Prompts, BareArraysAndObjects) {
  std::vector<PromptSpec> p;
  std::string err;
  ASSERT_TRUE(parsePrompts("[1, 2, 3]\n\n  {\"ids\": [4], \"max_new_tokens\": 5, "
                           "\"temperature\": 0.5, \"top_k\": 3, \"top_p\": 0.9, "
                           "\"seed\": 11}\n[]\n",
                           p, err))
      << err;
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].ids, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(p[0].maxNewTokens);
  EXPECT_EQ(p[1].ids, (std::vector<int64_t>{4}));
  EXPECT_EQ(*p[1].maxNewTokens, 5);
  EXPECT_DOUBLE_EQ(*p[1].temperature, 0.5);
  EXPECT_EQ(*p[1].topK, 3);
  EXPECT_DOUBLE_EQ(*p[1].topP, 0.9);
  EXPECT_EQ(*p[1].seed, 11u);
  EXPECT_TRUE(p[2].ids.empty());
}

TEST(Prompts, ErrorsNameLineAndColumn) {
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"[1, 2", "line 1, column 6: expected ']'"},
      {"[1]\n[1.5]", "line 2, column 2: expected an integer"},
      {"{\"ids\": [1], \"bogus\": 2}", "line 1, column 14: unknown key \"bogus\""},
      {"{\"max_new_tokens\": 2}", "line 1, column 22: a prompt object needs \"ids\""},
      {"[1] x", "line 1, column 5: unexpected text after the prompt"},
      {"{\"ids\": [1], \"ids\": [2]}", "line 1, column 14: \"ids\" given twice"},
      {"[1e999]", "line 1, column 2: number out of range"},
      {"\"text\"", "line 1, column 1: expected '{'"},
  };
  for (const Case &c : cases) {
    std::vector<PromptSpec> p;
    std::string err;
    EXPECT_FALSE(parsePrompts(c.text, p, err)) << c.text;
    EXPECT_EQ(err, c.message) << c.text;
  }
}

TEST(Prompts, TextInsteadOfIds) {
  std::vector<PromptSpec> p;
  std::string err;
  ASSERT_TRUE(parsePrompts("{\"text\": \"a\\\"b\\\\\\n\\u00e9\\ud83d\\ude00 \xc3\xa9\", \"seed\": 3}\n"
                           "{\"text\": \"\\udc00\"}\n",
                           p, err))
      << err;
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(*p[0].text, "a\"b\\\n\xc3\xa9\xf0\x9f\x98\x80 \xc3\xa9");
  EXPECT_TRUE(p[0].ids.empty());
  EXPECT_EQ(*p[0].seed, 3u);
  EXPECT_EQ(*p[1].text, "\xef\xbf\xbd"); // a lone surrogate
  struct Case {
    const char *text, *message;
  } cases[] = {
      {"{\"text\": 1}", "line 1, column 10: expected '\"'"},
      {"{\"text\": \"x\", \"ids\": [1]}", "line 1, column 15: \"text\" and \"ids\" given together"},
      {"{\"ids\": [1], \"text\": \"x\"}", "line 1, column 14: \"text\" and \"ids\" given together"},
      {"{\"text\": \"\\q\"}", "line 1, column 13: a bad escape in a string"},
      {"{\"text\": \"abc", "line 1, column 14: expected '\"'"},
  };
  for (const Case &c : cases) {
    std::vector<PromptSpec> q;
    EXPECT_FALSE(parsePrompts(c.text, q, err)) << c.text;
    EXPECT_EQ(err, c.message) << c.text;
  }
}

TEST(Prompts, DeepOrHugeInputDoesNotCrash) {
  std::vector<PromptSpec> p;
  std::string err;
  EXPECT_FALSE(parsePrompts(std::string(100000, '['), p, err));
  EXPECT_FALSE(parsePrompts("[" + std::string(100, '9') + "]", p, err));
}

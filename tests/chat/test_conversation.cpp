// Conversation: which tokens each turn feeds, when the model must start over, and the bos.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "chat/conversation.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace hfstatic {
namespace {

using nlohmann::json;

// The demo model's byte-level tokenizer, with a post-processor that adds <|endoftext|> (the bos
// here) in front of every encoding made with special tokens, and the given chat template.
Tokenizer tokenizer_with(const std::string& chat_template) {
  json tokenizer = json::parse(read_text_file(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo/tokenizer.json"));
  tokenizer["post_processor"] = {{"type", "TemplateProcessing"},
                                 {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                                         {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                                 {"special_tokens", json::object()}};
  const json config = {
      {"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}, {"chat_template", chat_template}};
  return Tokenizer::from_json(tokenizer.dump(), config.dump());
}

const char* kPlainTemplate =
    "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}";

std::vector<int64_t> encode(const Tokenizer& tok, const std::string& text) {
  const std::vector<int32_t> ids = tok.encode(text, /*add_special_tokens=*/false);
  return std::vector<int64_t>(ids.begin(), ids.end());
}

// What a model would sample for `text`: its tokens and the end token.
std::vector<int64_t> reply_tokens(const Tokenizer& tok, const std::string& text) {
  std::vector<int64_t> ids = encode(tok, text);
  ids.push_back(*tok.eos_id());
  return ids;
}

TEST(Conversation, SecondTurnFeedsOnlyTheNewPart) {
  const Tokenizer tok = tokenizer_with(kPlainTemplate);
  Conversation conversation(tok, std::string("Be brief."));
  conversation.add_user("Hello there");
  bool restart = true;
  const std::vector<int64_t> first = conversation.pending_tokens(restart);
  EXPECT_FALSE(restart);
  EXPECT_EQ(first, encode(tok, "<|endoftext|><system>Be brief.<|endoftext|><user>Hello there<|endoftext|><assistant>"));

  conversation.add_assistant(reply_tokens(tok, "Hi."), "Hi.");
  conversation.add_user("How are you?");
  restart = true;
  const std::vector<int64_t> second = conversation.pending_tokens(restart);
  EXPECT_FALSE(restart);
  // The reply and its end token are in the model already.
  EXPECT_EQ(second, encode(tok, "<user>How are you?<|endoftext|><assistant>"));
  ASSERT_EQ(conversation.messages().size(), 4u);
  EXPECT_EQ(conversation.messages()[2].role, "assistant");
  EXPECT_EQ(conversation.messages()[2].content, "Hi.");
}

TEST(Conversation, TemplateThatRewritesEarlierTurnsRestarts) {
  // Marks the last message only, so each new message changes how the previous one renders.
  const Tokenizer tok = tokenizer_with(
      "{% for m in messages %}{% if loop.last %}[last]{% endif %}<{{ m.role }}>{{ m.content }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}");
  Conversation conversation(tok);
  conversation.add_user("one");
  bool restart = true;
  conversation.pending_tokens(restart);
  EXPECT_FALSE(restart);
  conversation.add_assistant(reply_tokens(tok, "two"), "two");
  conversation.add_user("three");
  const std::vector<int64_t> again = conversation.pending_tokens(restart);
  EXPECT_TRUE(restart);
  EXPECT_EQ(again, encode(tok, "<user>one<assistant>two[last]<user>three<assistant>"));
  // After the restart the conversation continues from the new rendering.
  conversation.add_assistant(reply_tokens(tok, "four"), "four");
  conversation.add_user("five");
  conversation.pending_tokens(restart);
  EXPECT_TRUE(restart);
}

TEST(Conversation, BosIsFedOnceAtTheStart) {
  const Tokenizer tok = tokenizer_with(kPlainTemplate);
  const int64_t bos = *tok.bos_id();
  ASSERT_EQ(tok.encode("x", /*add_special_tokens=*/true).front(), bos);  // the post-processor would add one
  Conversation conversation(tok);
  conversation.add_user("Hello");
  bool restart = false;
  const std::vector<int64_t> first = conversation.pending_tokens(restart);
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.front(), bos);
  EXPECT_EQ(std::count(first.begin(), first.end(), bos), 2);  // the template's bos and the user turn's eos (same id)
  EXPECT_NE(first[1], bos);
  conversation.add_assistant(reply_tokens(tok, "Hi"), "Hi");
  conversation.add_user("Bye");
  const std::vector<int64_t> second = conversation.pending_tokens(restart);
  EXPECT_FALSE(restart);
  ASSERT_FALSE(second.empty());
  EXPECT_NE(second.front(), bos);
}

TEST(Conversation, FromMessagesFeedsTheWholeConversation) {
  const Tokenizer tok = tokenizer_with(kPlainTemplate);
  const std::vector<ChatMessage> messages = {{"system", "S"}, {"user", "U1"}, {"assistant", "A1"}, {"user", "U2"}};
  Conversation conversation(tok, messages);
  bool restart = true;
  EXPECT_EQ(conversation.pending_tokens(restart), encode(tok, apply_chat_template(tok, messages, true)));
  EXPECT_FALSE(restart);
  EXPECT_EQ(apply_chat_template(tok, messages, true),
            "<|endoftext|><system>S<|endoftext|><user>U1<|endoftext|><assistant>A1<|endoftext|><user>U2<|endoftext|><"
            "assistant>");
}

TEST(Conversation, NoTemplateIsAnError) {
  const Tokenizer tok = Tokenizer::from_file(std::string(HFSTATIC_SOURCE_DIR) + "/models/demo/tokenizer.json");
  Conversation conversation(tok);
  conversation.add_user("hi");
  bool restart = false;
  try {
    conversation.pending_tokens(restart);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no chat_template"), std::string::npos) << e.what();
  }
}

TEST(Conversation, TemplateContextAndMessageFieldsReachTheTemplate) {
  const Tokenizer tok = tokenizer_with(
      "{% for t in tools %}[{{ t.function.name }}]{% endfor %}{% if enable_thinking is false %}(no think){% endif %}"
      "{% for m in messages %}<{{ m.role }}>{% if m.tool_calls %}{% for c in m.tool_calls %}"
      "{{ c.function.name }}{{ c.function.arguments|tojson }}{% endfor %}{% else %}{{ m.content }}{% endif %}"
      "{% if m.tool_call_id %}#{{ m.tool_call_id }}{% endif %}{% endfor %}");
  std::vector<ChatMessage> messages = {{"user", "hi"}};
  ChatMessage call{"assistant", ""};
  call.content_null = true;
  call.fields = nlohmann::ordered_json::parse(R"({"tool_calls": [{"function": {"name": "f", "arguments": {"b": 1,
      "a": 2}}}]})");
  messages.push_back(call);
  ChatMessage result{"tool", "42"};
  result.fields = {{"tool_call_id", "c1"}};
  messages.push_back(result);
  const nlohmann::ordered_json context = {{"tools", {{{"function", {{"name", "f"}}}}}}, {"enable_thinking", false}};
  EXPECT_EQ(apply_chat_template(tok, messages, false, context),
            "[f](no think)<user>hi<assistant>f{\"b\": 1, \"a\": 2}<tool>42#c1");
  Conversation conversation(tok, messages, context);
  bool restart = false;
  EXPECT_EQ(conversation.pending_tokens(restart),
            encode(tok, "[f](no think)<user>hi<assistant>f{\"b\": 1, \"a\": 2}<tool>42#c1"));
}

// A template that renders 8 MiB of spaces: the encode stops at the limit, before tokenizing it.
TEST(Conversation, PendingTokensStopAtTheirLimit) {
  const Tokenizer tok = tokenizer_with("{{ '%8388607d' % 1 }}{% for m in messages %}{{ m.content }}{% endfor %}");
  Conversation conversation(tok);
  conversation.add_user("Hello");
  bool restart = false;
  try {
    conversation.pending_tokens(restart, 100);
    ADD_FAILURE() << "encoded";
  } catch (const TokenLimitError& e) {
    EXPECT_EQ(e.max_tokens(), 100u);
  }
  const Tokenizer small = tokenizer_with(kPlainTemplate);
  Conversation fits(small);
  fits.add_user("Hello");
  const size_t n = fits.pending_tokens(restart).size();
  Conversation exact(small);
  exact.add_user("Hello");
  EXPECT_EQ(exact.pending_tokens(restart, n).size(), n);
  Conversation over(small);
  over.add_user("Hello");
  EXPECT_THROW(over.pending_tokens(restart, n - 1), TokenLimitError);
}

}  // namespace
}  // namespace hfstatic

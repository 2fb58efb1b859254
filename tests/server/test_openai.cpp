// Request validation and response / SSE formatting of the OpenAI-compatible server.
#include <gtest/gtest.h>

#include <chrono>
#include <tuple>

#include "hang_bound.h"
#include "server/openai.h"

namespace hfstatic::server {
namespace {

using nlohmann::json;

const ModelLimits kLimits{512, true};

CompletionRequest parse(const json& body, Endpoint ep = Endpoint::Completions, ModelLimits limits = kLimits) {
  return parse_completion_request(body.dump(), ep, limits);
}

// The ApiError a body gets (fails the test when it parses).
ApiError error_of(const std::string& body, Endpoint ep = Endpoint::Completions, ModelLimits limits = kLimits) {
  try {
    parse_completion_request(body, ep, limits);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(ServerRequest, CompletionDefaultsAndFields) {
  auto r = parse({{"model", "x"}, {"prompt", "Hello"}});
  EXPECT_EQ(r.prompt, "Hello");
  EXPECT_EQ(r.model, "x");
  EXPECT_EQ(r.config.max_new_tokens, 16);
  EXPECT_FLOAT_EQ(r.config.sampling.temperature, 1.0f);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.seed_given);

  r = parse({{"prompt", json::array({"one"})},
             {"max_tokens", 100},
             {"temperature", 0},
             {"top_p", 0.5},
             {"seed", 42},
             {"stop", "\n"},
             {"stream", true},
             {"stream_options", {{"include_usage", true}}},
             {"n", 1},
             {"user", "u"},
             {"presence_penalty", 0},
             {"top_k", 5},
             {"ignore_eos", true},
             {"speculative", false}});
  EXPECT_EQ(r.prompt, "one");
  EXPECT_EQ(r.config.max_new_tokens, 100);
  EXPECT_FLOAT_EQ(r.config.sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(r.config.sampling.top_p, 0.5f);
  EXPECT_EQ(r.config.sampling.seed, 42u);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.config.stop_strings, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.config.sampling.top_k, 5);
  EXPECT_TRUE(r.config.ignore_eos);
  EXPECT_FALSE(r.speculative);

  r = parse({{"prompt", "x"}, {"stop", json::array({"a", "", "b"})}, {"max_tokens", 512}});
  EXPECT_TRUE(r.speculative);
  EXPECT_EQ(r.config.stop_strings, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.config.max_new_tokens, 512);
}

TEST(ServerRequest, ChatMessages) {
  auto r = parse({{"messages", json::array({{{"role", "system"}, {"content", "Be brief."}},
                                            {{"role", "user"},
                                             {"content", json::array({{{"type", "text"}, {"text", "Hi "}},
                                                                      {{"type", "text"}, {"text", "there"}}})}},
                                            {{"role", "assistant"}, {"content", nullptr}},
                                            {{"role", "developer"}, {"content", "d"}, {"name", "n"}}})},
                  {"max_completion_tokens", 7}},
                 Endpoint::ChatCompletions);
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hi there");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "system");
  EXPECT_EQ(r.config.max_new_tokens, 7);
  // Without max_tokens a chat runs until the context is full.
  r = parse({{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}, Endpoint::ChatCompletions);
  EXPECT_EQ(r.config.max_new_tokens, 512);
}

TEST(ServerRequest, ToolsDocumentsAndTemplateArgumentsReachTheTemplate) {
  const std::string body = R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"a\": 1}"}}]},
      {"role": "tool", "tool_call_id": "call1", "content": "18 C"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"z": {"type": "string"}, "a": {"type": "string"}}}}}],
    "tool_choice": "auto", "parallel_tool_calls": false,
    "documents": [{"title": "T", "text": "D"}],
    "chat_template_kwargs": {"enable_thinking": false, "custom": [1]}})";
  const CompletionRequest r = parse_completion_request(body, Endpoint::ChatCompletions, kLimits);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_TRUE(r.messages[1].content_null);
  EXPECT_EQ(r.messages[1].content, "");
  // The arguments string became a mapping, in the client's key order.
  EXPECT_EQ(r.messages[1].fields["tool_calls"][0]["function"]["arguments"].dump(), R"({"city":"Paris","a":1})");
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].fields["tool_call_id"], "call1");
  EXPECT_FALSE(r.messages[0].content_null);
  EXPECT_TRUE(r.messages[0].fields.is_null());
  EXPECT_EQ(r.template_context["tools"][0]["function"]["parameters"]["properties"].dump(),
            R"({"z":{"type":"string"},"a":{"type":"string"}})");
  EXPECT_EQ(r.template_context["documents"][0]["text"], "D");
  EXPECT_EQ(r.template_context["enable_thinking"], false);
  EXPECT_EQ(r.template_context["custom"][0], 1);
  EXPECT_FALSE(r.template_context.contains("tool_choice"));
  // Without them the context is empty.
  EXPECT_TRUE(parse({{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}}, Endpoint::ChatCompletions)
                  .template_context.empty());
}

TEST(ServerRequest, ToolFieldRejectionsNameTheField) {
  const Endpoint H = Endpoint::ChatCompletions;
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": 5})", "tools", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {}}]})",
       "tools[0].function.name", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "retrieval"}]})", "tools[0].type",
       "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f",
          "parameters": 3}}]})",
       "tools[0].function.parameters", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "always"})", "tool_choice", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "documents": [3]})", "documents[0]", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})", "chat_template_kwargs",
       "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"messages": []}})",
       "chat_template_kwargs.messages", "invalid_value"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id", "missing_required_parameter"},
      {R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 5}]})", "messages[0].tool_call_id",
       "invalid_type"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_call_id": "a"}]})", "messages[0].tool_call_id",
       "unknown_parameter"},
      {R"({"messages": [{"role": "assistant", "tool_calls": 1}]})", "messages[0].tool_calls", "invalid_type"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f",
          "arguments": "{not json"}}]}]})",
       "messages[0].tool_calls[0].function.arguments", "invalid_value"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]})",
       "messages[0].tool_calls[0].function.arguments", "missing_required_parameter"},
      {R"({"messages": [{"role": "assistant"}]})", "messages[0].content", "missing_required_parameter"},
  };
  for (const auto& [body, param, code] : cases) {
    ApiError e = error_of(body, H);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_EQ(e.code, code) << body << ": " << e.message;
  }
}

TEST(ServerRequest, SamplingFieldsHaveTheRangesOfRunsFlags) {
  EXPECT_EQ(error_of(R"({"prompt": "x", "temperature": 2.5})").message, "'temperature': 2.5 is outside [0, 2]");
  EXPECT_EQ(error_of(R"({"prompt": "x", "top_k": 2147483649})").message,
            "'top_k': 2147483649 is outside [0, 2147483648]");
  EXPECT_EQ(error_of(R"({"prompt": "x", "repetition_penalty": 0.001})").message,
            "'repetition_penalty': 0.001 is outside [0.01, 100]");
  EXPECT_EQ(error_of(R"({"prompt": "x", "top_k": 1.5})").code, "invalid_type");
}

TEST(ServerRequest, Rejections) {
  struct Case {
    std::string body;
    Endpoint ep;
    std::string param, code;
  };
  const Endpoint C = Endpoint::Completions, H = Endpoint::ChatCompletions;
  const std::vector<Case> cases = {
      {"{not json", C, "", "invalid_json"},
      {"", C, "", "invalid_json"},
      {"[1]", C, "", "invalid_json"},
      {"{\"prompt\": " + std::string(100000, '[') + std::string(100000, ']') + "}", C, "", "invalid_json"},
      {R"({"max_tokens": 3})", C, "prompt", "missing_required_parameter"},
      {R"({"prompt": 5})", C, "prompt", "invalid_type"},
      {R"({"prompt": [1, 2]})", C, "prompt", "invalid_type"},
      {R"({"prompt": ["a", "b"]})", C, "prompt", "invalid_value"},
      {R"({"prompt": "x", "max_tokens": "5"})", C, "max_tokens", "invalid_type"},
      {R"({"prompt": "x", "max_tokens": 2.5})", C, "max_tokens", "invalid_type"},
      {R"({"prompt": "x", "max_tokens": -1})", C, "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "max_tokens": 513})", C, "max_tokens", "context_length_exceeded"},
      {R"({"prompt": "x", "max_tokens": 18446744073709551615})", C, "max_tokens", "invalid_value"},
      {R"({"prompt": "x", "temperature": "hot"})", C, "temperature", "invalid_type"},
      {R"({"prompt": "x", "temperature": 2.5})", C, "temperature", "invalid_value"},
      {R"({"prompt": "x", "top_p": -0.1})", C, "top_p", "invalid_value"},
      {R"({"prompt": "x", "seed": 1.5})", C, "seed", "invalid_type"},
      {R"({"prompt": "x", "stop": 3})", C, "stop", "invalid_type"},
      {R"({"prompt": "x", "stop": ["a", 3]})", C, "stop", "invalid_type"},
      {R"({"prompt": "x", "stop": ["a", "b", "c", "d", "e"]})", C, "stop", "invalid_value"},
      {R"({"prompt": "x", "stream": 1})", C, "stream", "invalid_type"},
      {R"({"prompt": "x", "stream_options": {"include_usage": true}})", C, "stream_options", "invalid_value"},
      {R"({"prompt": "x", "n": 2})", C, "n", "invalid_value"},
      {R"({"prompt": "x", "best_of": 3})", C, "best_of", "invalid_value"},
      {R"({"prompt": "x", "echo": true})", C, "echo", "invalid_value"},
      {R"({"prompt": "x", "logprobs": 1})", C, "logprobs", "invalid_value"},
      {R"({"prompt": "x", "suffix": "s"})", C, "suffix", "invalid_value"},
      {R"({"prompt": "x", "presence_penalty": 0.5})", C, "presence_penalty", "invalid_value"},
      {R"({"prompt": "x", "logit_bias": {"1": 5}})", C, "logit_bias", "invalid_value"},
      {R"({"prompt": "x", "model": 3})", C, "model", "invalid_type"},
      {R"({"prompt": "x", "wat": 3})", C, "wat", "unknown_parameter"},
      {R"({"prompt": "x", "messages": []})", C, "messages", "unknown_parameter"},
      {R"({"prompt": "x"})", H, "prompt", "unknown_parameter"},
      {R"({})", H, "messages", "missing_required_parameter"},
      {R"({"messages": "hi"})", H, "messages", "invalid_type"},
      {R"({"messages": []})", H, "messages", "invalid_value"},
      {R"({"messages": [5]})", H, "messages[0]", "invalid_type"},
      {R"({"messages": [{"content": "x"}]})", H, "messages[0].role", "invalid_type"},
      {R"({"messages": [{"role": "wizard", "content": "x"}]})", H, "messages[0].role", "invalid_value"},
      {R"({"messages": [{"role": "user"}]})", H, "messages[0].content", "missing_required_parameter"},
      {R"({"messages": [{"role": "user", "content": 5}]})", H, "messages[0].content", "invalid_type"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", H, "messages[0].content[0]",
       "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", H, "messages[0].tool_calls",
       "unknown_parameter"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", H, "n", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})", H, "logprobs", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": []})", H, "tools", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})", H,
       "response_format", "invalid_value"},
      {R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 1000})", H, "max_completion_tokens",
       "context_length_exceeded"},
  };
  for (const auto& c : cases) {
    ApiError e = error_of(c.body, c.ep);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error") << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_EQ(e.code, c.code) << c.body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
  // A model without a chat template takes completions only.
  ApiError e = error_of(R"({"messages": [{"role": "user", "content": "x"}]})", H, ModelLimits{512, false});
  EXPECT_EQ(e.code, "no_chat_template");
}

TEST(ServerFormat, ErrorBody) {
  json j = error_body(ApiError(400, "bad thing", "max_tokens", "invalid_value"));
  EXPECT_EQ(j, json::parse(R"({"error": {"message": "bad thing", "type": "invalid_request_error", "param": "max_tokens",
                                          "code": "invalid_value"}})"));
  j = error_body(ApiError(503, "busy", "", "", "server_error"));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(j["error"]["type"], "server_error");
}

TEST(ServerFormat, FinishReasons) {
  EXPECT_STREQ(finish_reason(StopReason::Eos), "stop");
  EXPECT_STREQ(finish_reason(StopReason::StopToken), "stop");
  EXPECT_STREQ(finish_reason(StopReason::StopString), "stop");
  EXPECT_STREQ(finish_reason(StopReason::Length), "length");
  EXPECT_STREQ(finish_reason(StopReason::ContextFull), "length");
}

TEST(ServerFormat, Responses) {
  json c = completion_response("cmpl-1", 100, "m", "hi", StopReason::Eos, {3, 2});
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "hi");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(c["usage"], json::parse(R"({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                                      "prompt_tokens_details": {"cached_tokens": 0}})"));
  json h = chat_response("chatcmpl-1", 100, "m", "hi", StopReason::Length, {3, 2});
  EXPECT_EQ(h["object"], "chat.completion");
  EXPECT_EQ(h["choices"][0]["message"], json::parse(R"({"role": "assistant", "content": "hi"})"));
  EXPECT_EQ(h["choices"][0]["finish_reason"], "length");
}

TEST(ServerFormat, StreamChunks) {
  json first = chat_chunk("id", 1, "m", "", std::nullopt, true);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role": "assistant", "content": ""})"));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  json piece = chat_chunk("id", 1, "m", "abc", std::nullopt);
  EXPECT_EQ(piece["choices"][0]["delta"], json::parse(R"({"content": "abc"})"));
  json last = chat_chunk("id", 1, "m", "", StopReason::Length);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  json tc = completion_chunk("id", 1, "m", "xy", std::nullopt);
  EXPECT_EQ(tc["object"], "text_completion");
  EXPECT_EQ(tc["choices"][0]["text"], "xy");
  json u = usage_chunk("id", 1, "m", false, {4, 5, 3});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 9);
  EXPECT_EQ(u["usage"]["prompt_tokens_details"]["cached_tokens"], 3);

  const std::string event = sse_event(piece);
  ASSERT_EQ(event.rfind("data: ", 0), 0u);
  ASSERT_EQ(event.substr(event.size() - 2), "\n\n");
  EXPECT_EQ(event.find('\n'), event.size() - 2);  // one line: newlines inside text are escaped
  EXPECT_EQ(json::parse(event.substr(6)), piece);
  EXPECT_EQ(sse_event(completion_chunk("id", 1, "m", "a\nb\n\n", std::nullopt)).find('\n'),
            sse_event(completion_chunk("id", 1, "m", "a\nb\n\n", std::nullopt)).size() - 2);
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
  // Invalid UTF-8 from a model never throws: it becomes U+FFFD.
  std::string bad = dump(json{{"t", std::string("a\xff\xfe")}});
  EXPECT_EQ(json::parse(bad)["t"], "a\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace hfstatic::server

namespace hfstatic::server {
namespace {

TEST(ServerRequest, WideLogitBiasIsRefusedAfterALinearParse) {
  // About 117,000 entries in a 1 MiB body: a parser quadratic in an object's keys held a core
  // for minutes on this.
  std::string body = R"({"prompt":"x","logit_bias":{)";
  for (int i = 0; body.size() < (1u << 20) - 16; ++i) body += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  body += "}}";
  ApiError e = error_of(body);
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "logit_bias");
}

// `{"k0":1,"k1":1,...}` of about `bytes`.
std::string wide_object(size_t bytes) {
  std::string o = "{";
  for (int i = 0; o.size() < bytes - 16; ++i) o += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  return o + "}";
}

// A 1 MiB body with a wide object between `before` and `after`.
std::string wide_body(const std::string& before, const std::string& after) {
  return before + wide_object((1u << 20) - before.size() - after.size()) + after;
}

std::string tool_call_body(const std::string& arguments) {
  return R"({"messages": [{"role": "assistant", "content": null, "tool_calls": [{"type": "function",
      "function": {"name": "f", "arguments": )" +
         json(arguments).dump() + "}}]}]}";
}

TEST(ServerRequest, ToolCallArgumentsNestAsDeepAsTheBody) {
  auto nested = [](int levels) {
    return "{\"a\":" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  const CompletionRequest r = parse_completion_request(tool_call_body(nested(64)), Endpoint::ChatCompletions, kLimits);
  EXPECT_TRUE(r.messages[0].fields["tool_calls"][0]["function"]["arguments"].is_object());
  // 5,000 levels fit in a body of 64; copying them recursed once per level, and 66,666 of them
  // in a 533 KB body overflowed the stack of the server.
  for (int levels : {65, 5000}) {
    ApiError e = error_of(tool_call_body(nested(levels)), Endpoint::ChatCompletions);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "messages[0].tool_calls[0].function.arguments") << e.message;
    EXPECT_NE(e.message.find("deeper than 64 levels"), std::string::npos) << e.message;
  }
}

TEST(ServerRequest, RepeatedKeysKeepTheirFirstPlaceAndLastValue) {
  const CompletionRequest r = parse_completion_request(
      std::string(R"({"messages": [{"role": "user", "content": "a"}], "max_tokens": 3, "max_tokens": 5,
          "chat_template_kwargs": {"x": 1, "y": 2, "x": 3}})"),
      Endpoint::ChatCompletions, kLimits);
  EXPECT_EQ(r.config.max_new_tokens, 5);
  EXPECT_EQ(r.template_context.dump(), R"({"x":3,"y":2})");
}

TEST(ServerRequest, WideObjectsAnywhereAreHandledInLinearTime) {
  // 1 MiB bodies of 80,000 to 110,000 keys in one object. Parsed into an ordered_json whose
  // every insertion looked for the key among those before it, each took 6 to 40 s of a core;
  // linear, each takes a few tens of milliseconds. The bound is ten times that and more.
  const Endpoint H = Endpoint::ChatCompletions;
  const std::string user = R"({"messages": [{"role": "user", "content": "x"}], )";
  struct Case {
    std::string what, body, param;  // param: empty when accepted
  };
  const std::vector<Case> cases = {
      {"top level", wide_body("", "").insert(1, R"("messages": [{"role": "user", "content": "x"}], )"), "k0"},
      {"chat_template_kwargs", wide_body(user + R"("chat_template_kwargs": )", "}"), "chat_template_kwargs"},
      {"tool parameters",
       wide_body(user + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": )", "}}]}"), ""},
      {"tool call arguments", tool_call_body(wide_object(800 << 10)), ""},
  };
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    try {
      const CompletionRequest r = parse_completion_request(c.body, H, kLimits);
      EXPECT_EQ(c.param, "") << c.what << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.param, c.param) << c.what << ": " << e.message;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, double(test::hang_bound(2).count())) << c.what;
  }
}

}  // namespace
}  // namespace hfstatic::server

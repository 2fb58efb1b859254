// OpenAI-compatible request parsing and validation, and response / server-sent-event formatting.
// Pure functions over JSON: no sockets, no runners, so that every rule is unit-testable.
#pragma once
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "runner/runner.h"

namespace hfstatic::server {

// An error answered to the client as {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::exception {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty: null
  std::string code;   // empty: null
  ApiError(int status, std::string message, std::string param = {}, std::string code = {},
           std::string type = "invalid_request_error")
      : status(status),
        message(std::move(message)),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}
  const char* what() const noexcept override { return message.c_str(); }
};
nlohmann::json error_body(const ApiError& e);

enum class Endpoint { Completions, ChatCompletions };

// How deep a request body, and a tool call's arguments string, may nest.
inline constexpr int kMaxRequestDepth = 64;

// What validation needs to know about the served model.
struct ModelLimits {
  int64_t max_context = 0;
  bool has_chat_template = false;
};

// A validated request. Text prompts only: `prompt` for completions, `messages` for chat.
struct CompletionRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::string model;
  std::string prompt;
  std::vector<ChatMessage> messages;
  // The chat template's other variables: tools, documents, chat_template_kwargs' keys.
  nlohmann::ordered_json template_context = nlohmann::ordered_json::object();
  GenerationConfig config;  // max_new_tokens, sampling (seed drawn at random when not given), stop strings
  bool seed_given = false;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool speculative = true;     // the extension "speculative": false turns the server's drafter off
};

// Parses and validates a request body; throws ApiError (400) naming the offending parameter.
CompletionRequest parse_completion_request(const std::string& body, Endpoint endpoint, const ModelLimits& limits);
// Same, from already parsed JSON.
CompletionRequest parse_completion_request(const nlohmann::json& body, Endpoint endpoint, const ModelLimits& limits);

// "stop" for eos, stop tokens and stop strings; "length" for the token limit and a full context.
const char* finish_reason(StopReason reason);

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens a slot's cache held already (prompt_tokens_details)
};
nlohmann::json usage_json(const Usage& u);

// Whole responses (stream: false).
nlohmann::json completion_response(const std::string& id, int64_t created, const std::string& model,
                                   const std::string& text, StopReason reason, const Usage& usage);
nlohmann::json chat_response(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                             StopReason reason, const Usage& usage);

// Stream chunks. finish: nullopt for content chunks, the reason for the last one.
nlohmann::json completion_chunk(const std::string& id, int64_t created, const std::string& model,
                                const std::string& text, std::optional<StopReason> finish);
// role_only: the opening chunk (delta {"role": "assistant", "content": ""}).
nlohmann::json chat_chunk(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                          std::optional<StopReason> finish, bool role_only = false);
// The usage chunk sent before [DONE] when stream_options.include_usage is set (choices: []).
nlohmann::json usage_chunk(const std::string& id, int64_t created, const std::string& model, bool chat,
                           const Usage& usage);

// JSON text that never throws: invalid UTF-8 is replaced with U+FFFD.
std::string dump(const nlohmann::json& j);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& j);
// "data: [DONE]\n\n"
std::string sse_done();

}  // namespace hfstatic::server

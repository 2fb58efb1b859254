#include "server/openai.h"

#include <climits>
#include <cmath>
#include <random>
#include <set>

#include "server/chat_fields.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace hfstatic::server {

using nlohmann::json;

json error_body(const ApiError& e) {
  json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return json{{"error", err}};
}

namespace {

[[noreturn]] void bad(const std::string& param, const std::string& message, const std::string& code = "invalid_value") {
  throw ApiError(400, message, param, code);
}

[[noreturn]] void bad_type(const std::string& param, const std::string& expected) {
  bad(param, "'" + param + "' must be " + expected, "invalid_type");
}

bool is_null(const json& body, const char* key) { return !body.contains(key) || body[key].is_null(); }

double number(const json& body, const char* key, double fallback, double min, double max) {
  if (is_null(body, key)) return fallback;
  const json& v = body[key];
  if (!v.is_number()) bad_type(key, "a number");
  double x = v.get<double>();
  if (!(x >= min && x <= max))
    bad(key, cat("'", key, "' is ", v.dump(), "; it must be between ", json(min).dump(), " and ", json(max).dump()));
  return x;
}

int64_t integer(const json& body, const char* key, int64_t fallback, int64_t min, int64_t max) {
  if (is_null(body, key)) return fallback;
  const json& v = body[key];
  if (!v.is_number_integer()) bad_type(key, "an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))
    bad(key, "'" + std::string(key) + "' is " + v.dump() + "; it must be at most " + std::to_string(max));
  int64_t x = v.get<int64_t>();
  if (x < min || x > max)
    bad(key, "'" + std::string(key) + "' is " + std::to_string(x) + "; it must be between " + std::to_string(min) +
                 " and " + std::to_string(max));
  return x;
}

// A sampling parameter, checked against the range every front end shares (runner/sampler.h).
double sampling(const json& body, const char* key, SamplingParameter p, double fallback) {
  const double x = p == SamplingParameter::top_k ? double(integer(body, key, int64_t(fallback), INT64_MIN, INT64_MAX))
                                                 : number(body, key, fallback, -HUGE_VAL, HUGE_VAL);
  if (std::string why = sampling_value_problem(p, x); !why.empty()) bad(key, "'" + std::string(key) + "': " + why);
  return x;
}

bool boolean(const json& body, const char* key, bool fallback) {
  if (is_null(body, key)) return fallback;
  if (!body[key].is_boolean()) bad_type(key, "a boolean");
  return body[key].get<bool>();
}

std::string message_content(const json& content, const std::string& param) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad_type(param, "a string or an array of text parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string p = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      bad_type(p, "an object with a 'type'");
    if (part["type"] != "text")
      bad(p, "only text content parts are supported, not '" + part["type"].get<std::string>() + "'");
    if (!part.contains("text") || !part["text"].is_string()) bad_type(p + ".text", "a string");
    text += part["text"].get<std::string>();
  }
  return text;
}

const std::set<std::string>& known_keys(Endpoint endpoint) {
  static const std::set<std::string> common = {"model", "max_tokens", "temperature", "top_p", "seed", "stop", "stream",
                                               "stream_options", "n", "user", "presence_penalty", "frequency_penalty",
                                               "logit_bias", "logprobs",
                                               // extensions (as in other local servers)
                                               "top_k", "min_p", "repetition_penalty", "ignore_eos", "speculative"};
  static const std::set<std::string> completions = [] {
    auto s = common;
    s.insert({"prompt", "echo", "best_of", "suffix"});
    return s;
  }();
  static const std::set<std::string> chat = [] {
    auto s = common;
    s.insert({"messages", "max_completion_tokens", "top_logprobs", "response_format", "tools", "tool_choice",
              "parallel_tool_calls", "documents", "chat_template_kwargs"});
    return s;
  }();
  return endpoint == Endpoint::Completions ? completions : chat;
}

std::vector<ChatMessage> parse_messages(const json& body, const nlohmann::ordered_json& ordered,
                                        const ModelLimits& limits) {
  std::vector<ChatMessage> messages;
  if (is_null(body, "messages")) bad("messages", "'messages' is required", "missing_required_parameter");
  const json& ms = body["messages"];
  if (!ms.is_array()) bad_type("messages", "an array");
  if (ms.empty()) bad("messages", "'messages' must not be empty");
  for (size_t i = 0; i < ms.size(); ++i) {
    const std::string p = "messages[" + std::to_string(i) + "]";
    const json& m = ms[i];
    if (!m.is_object()) bad_type(p, "an object");
    if (!m.contains("role") || !m["role"].is_string()) bad_type(p + ".role", "a string");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant" && role != "developer" && role != "tool")
      bad(p + ".role", "role '" + role + "' is not supported (system, developer, user, assistant, tool)");
    nlohmann::ordered_json fields = parse_message_fields(ordered["messages"][i], role, p);
    const bool calls_tools = fields.contains("tool_calls");
    if (!m.contains("content") && !calls_tools)
      bad(p + ".content", "'content' is required", "missing_required_parameter");
    const json content = m.contains("content") ? m["content"] : json();
    messages.push_back({role == "developer" ? "system" : role, message_content(content, p + ".content"),
                        fields.empty() ? nlohmann::ordered_json() : std::move(fields),
                        calls_tools && content.is_null()});
  }
  if (!limits.has_chat_template)
    throw ApiError(400, "this model has no chat template; use /v1/completions", "messages", "no_chat_template");
  return messages;
}

std::string parse_prompt(const json& body) {
  if (is_null(body, "prompt")) bad("prompt", "'prompt' is required", "missing_required_parameter");
  const json& p = body["prompt"];
  if (p.is_string()) {
    return p.get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    return p[0].get<std::string>();
  } else if (p.is_array() && p.size() > 1 && p[0].is_string()) {
    bad("prompt", "only one prompt per request is supported");
  } else {
    bad_type("prompt", "a string");
  }
  return {};
}

std::vector<std::string> parse_stop(const json& body) {
  std::vector<std::string> out;
  const json& s = body["stop"];
  std::vector<std::string> stops;
  if (s.is_string()) {
    stops.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    if (s.size() > 4) bad("stop", "'stop' takes at most 4 sequences");
    for (const auto& x : s) {
      if (!x.is_string()) bad_type("stop", "a string or an array of strings");
      stops.push_back(x.get<std::string>());
    }
  } else {
    bad_type("stop", "a string or an array of strings");
  }
  for (auto& x : stops)
    if (!x.empty()) out.push_back(std::move(x));
  return out;
}

// Accepted at their neutral values only.
void refuse_unsupported(const json& body, bool chat) {
  if (integer(body, "n", 1, 1, INT64_MAX) != 1) bad("n", "only n = 1 is supported");
  if (!is_null(body, "user") && !body["user"].is_string()) bad_type("user", "a string");
  if (number(body, "presence_penalty", 0.0, -2.0, 2.0) != 0.0)
    bad("presence_penalty", "presence_penalty is not supported");
  if (number(body, "frequency_penalty", 0.0, -2.0, 2.0) != 0.0)
    bad("frequency_penalty", "frequency_penalty is not supported");
  if (!is_null(body, "logit_bias")) {
    if (!body["logit_bias"].is_object()) bad_type("logit_bias", "an object");
    if (!body["logit_bias"].empty()) bad("logit_bias", "logit_bias is not supported");
  }
  if (chat) {
    if (boolean(body, "logprobs", false)) bad("logprobs", "logprobs are not supported");
    if (integer(body, "top_logprobs", 0, 0, 20) != 0) bad("top_logprobs", "logprobs are not supported");
    if (!is_null(body, "response_format")) {
      const json& f = body["response_format"];
      if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
        bad_type("response_format", "an object with a 'type'");
      if (f["type"] != "text") bad("response_format", "only response_format {\"type\": \"text\"} is supported");
    }
  } else {
    if (integer(body, "logprobs", 0, 0, 5) != 0) bad("logprobs", "logprobs are not supported");
    if (boolean(body, "echo", false)) bad("echo", "echo is not supported");
    if (integer(body, "best_of", 1, 1, 20) != 1) bad("best_of", "only best_of = 1 is supported");
    if (!is_null(body, "suffix")) {
      if (!body["suffix"].is_string()) bad_type("suffix", "a string");
      if (!body["suffix"].get<std::string>().empty()) bad("suffix", "suffix is not supported");
    }
  }
}

CompletionRequest parse_request(const json& body, const nlohmann::ordered_json& ordered, Endpoint endpoint,
                                const ModelLimits& limits);

}  // namespace

CompletionRequest parse_completion_request(const std::string& body, Endpoint endpoint, const ModelLimits& limits) {
  // Parsed once, in the client's key order, which the chat template sees (tools, arguments...).
  nlohmann::ordered_json ordered;
  try {
    std::string why;
    ordered = parse_ordered_json_limited(body, "request body", kMaxRequestDepth, &why);
    if (ordered.is_discarded())
      throw ApiError(400, "We could not parse the JSON body of your request: " + why, "", "invalid_json");
  } catch (const Error& e) {
    throw ApiError(400, std::string("We could not parse the JSON body of your request: ") + e.what(), "",
                   "invalid_json");
  }
  // Looking a key up in an ordered_json walks its keys: the fields are read from a sorted copy.
  return parse_request(json(ordered), ordered, endpoint, limits);
}

CompletionRequest parse_completion_request(const json& body, Endpoint endpoint, const ModelLimits& limits) {
  return parse_request(body, nlohmann::ordered_json(body), endpoint, limits);
}

namespace {

CompletionRequest parse_request(const json& body, const nlohmann::ordered_json& ordered, Endpoint endpoint,
                                const ModelLimits& limits) {
  if (!body.is_object()) throw ApiError(400, "The request body must be a JSON object", "", "invalid_json");
  const bool chat = endpoint == Endpoint::ChatCompletions;
  for (const auto& [key, value] : body.items())
    if (!known_keys(endpoint).count(key))
      bad(key, "Unrecognized request argument supplied: " + key, "unknown_parameter");

  CompletionRequest r;
  r.endpoint = endpoint;
  if (!is_null(body, "model")) {
    if (!body["model"].is_string()) bad_type("model", "a string");
    r.model = body["model"].get<std::string>();
  }

  // The prompt.
  if (chat) {
    r.messages = parse_messages(body, ordered, limits);
    r.template_context = parse_template_context(ordered);
  } else {
    r.prompt = parse_prompt(body);
  }

  // Generation settings.
  const int64_t default_max = chat ? limits.max_context : 16;
  int64_t max_tokens = integer(body, "max_tokens", default_max, 0, INT64_MAX);
  if (chat && !is_null(body, "max_completion_tokens"))
    max_tokens = integer(body, "max_completion_tokens", default_max, 0, INT64_MAX);
  if (max_tokens > limits.max_context)
    bad(chat && !is_null(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
        "max_tokens is " + std::to_string(max_tokens) + ", more than this model's maximum context length of " +
            std::to_string(limits.max_context) + " tokens",
        "context_length_exceeded");
  r.config.max_new_tokens = max_tokens;
  r.config.sampling.temperature = float(sampling(body, "temperature", SamplingParameter::temperature, 1.0));
  r.config.sampling.top_p = float(sampling(body, "top_p", SamplingParameter::top_p, 1.0));
  r.config.sampling.top_k = int64_t(sampling(body, "top_k", SamplingParameter::top_k, 0.0));
  r.config.sampling.min_p = float(sampling(body, "min_p", SamplingParameter::min_p, 0.0));
  r.config.sampling.repetition_penalty =
      float(sampling(body, "repetition_penalty", SamplingParameter::repetition_penalty, 1.0));
  r.config.ignore_eos = boolean(body, "ignore_eos", false);
  r.speculative = boolean(body, "speculative", true);
  r.seed_given = !is_null(body, "seed");
  if (r.seed_given) {
    r.config.sampling.seed = uint64_t(integer(body, "seed", 0, INT64_MIN, INT64_MAX));
  } else {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    r.config.sampling.seed = rng();
  }
  if (!is_null(body, "stop")) {
    r.config.stop_strings = parse_stop(body);
  }
  r.stream = boolean(body, "stream", false);
  if (!is_null(body, "stream_options")) {
    const json& so = body["stream_options"];
    if (!so.is_object()) bad_type("stream_options", "an object");
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed with 'stream': true");
    for (const auto& [key, value] : so.items())
      if (key != "include_usage")
        bad("stream_options." + key, "Unrecognized stream option: " + key, "unknown_parameter");
    r.include_usage = boolean(so, "include_usage", false);
  }

  // Accepted at their neutral values only.
  refuse_unsupported(body, chat);
  return r;
}

}  // namespace

const char* finish_reason(StopReason reason) {
  switch (reason) {
    case StopReason::Length:
    case StopReason::ContextFull: return "length";
    default: return "stop";
  }
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json completion_response(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                         StopReason reason, const Usage& usage) {
  return {
      {"id", id},
      {"object", "text_completion"},
      {"created", created},
      {"model", model},
      {"choices",
       json::array({{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason(reason)}}})},
      {"usage", usage_json(usage)}};
}

json chat_response(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                   StopReason reason, const Usage& usage) {
  return {{"id", id},
          {"object", "chat.completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({{{"index", 0},
                                    {"message", {{"role", "assistant"}, {"content", text}}},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason(reason)}}})},
          {"usage", usage_json(usage)}};
}

json completion_chunk(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                      std::optional<StopReason> finish) {
  json choice = {{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (finish) choice["finish_reason"] = finish_reason(*finish);
  return {{"id", id},
          {"object", "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({choice})}};
}

json chat_chunk(const std::string& id, int64_t created, const std::string& model, const std::string& text,
                std::optional<StopReason> finish, bool role_only) {
  json delta = json::object();
  if (role_only) {
    delta = {{"role", "assistant"}, {"content", ""}};
  } else if (!finish) {
    delta = {{"content", text}};
  }
  json choice = {{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  if (finish) choice["finish_reason"] = finish_reason(*finish);
  return {{"id", id},
          {"object", "chat.completion.chunk"},
          {"created", created},
          {"model", model},
          {"choices", json::array({choice})}};
}

json usage_chunk(const std::string& id, int64_t created, const std::string& model, bool chat, const Usage& usage) {
  return {{"id", id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array()},
          {"usage", usage_json(usage)}};
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + dump(j) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace hfstatic::server

#include "server/chat_fields.h"

#include <set>

#include "server/openai.h"
#include "util/error.h"
#include "util/json_limits.h"

namespace hfstatic::server {
namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& param, const std::string& message, const std::string& code = "invalid_value") {
  throw ApiError(400, message, param, code);
}
[[noreturn]] void bad_type(const std::string& param, const std::string& expected) {
  bad(param, "'" + param + "' must be " + expected, "invalid_type");
}

bool present(const ordered_json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

const std::string& string_field(const ordered_json& j, const char* key, const std::string& param) {
  if (!j.contains(key) || !j[key].is_string()) bad_type(param + "." + key, "a string");
  return j[key].get_ref<const std::string&>();
}

// {"type": "function", "function": {"name", "description"?, "parameters"?}}
void check_tool(const ordered_json& tool, const std::string& p) {
  if (!tool.is_object()) bad_type(p, "an object");
  if (string_field(tool, "type", p) != "function") bad(p + ".type", "only tools of type 'function' are supported");
  if (!tool.contains("function") || !tool["function"].is_object()) bad_type(p + ".function", "an object");
  const ordered_json& f = tool["function"];
  if (string_field(f, "name", p + ".function").empty()) bad(p + ".function.name", "the function name is empty");
  if (present(f, "description") && !f["description"].is_string()) bad_type(p + ".function.description", "a string");
  if (present(f, "parameters") && !f["parameters"].is_object()) bad_type(p + ".function.parameters", "an object");
}

void check_tool_choice(const ordered_json& choice) {
  if (choice.is_string()) {
    const std::string& s = choice.get_ref<const std::string&>();
    if (s != "none" && s != "auto" && s != "required")
      bad("tool_choice", "'tool_choice' must be none, auto or required");
    return;
  }
  if (!choice.is_object()) bad_type("tool_choice", "a string or an object");
  if (string_field(choice, "type", "tool_choice") != "function") bad("tool_choice.type", "must be 'function'");
  if (!choice.contains("function") || !choice["function"].is_object()) bad_type("tool_choice.function", "an object");
  string_field(choice["function"], "name", "tool_choice.function");
}

// An assistant's tool call: {"id"?, "type": "function", "function": {"name", "arguments"}}.
ordered_json tool_call(const ordered_json& call, const std::string& p) {
  if (!call.is_object()) bad_type(p, "an object");
  if (present(call, "id") && !call["id"].is_string()) bad_type(p + ".id", "a string");
  if (present(call, "type") && call["type"] != "function") bad(p + ".type", "only 'function' tool calls are supported");
  if (!call.contains("function") || !call["function"].is_object()) bad_type(p + ".function", "an object");
  ordered_json out = call;
  ordered_json& f = out["function"];
  string_field(f, "name", p + ".function");
  if (!f.contains("arguments")) bad(p + ".function.arguments", "'arguments' is required", "missing_required_parameter");
  if (f["arguments"].is_string()) {
    // Templates read the arguments as a mapping (tool_call.arguments|tojson, .items()).
    const std::string param = p + ".function.arguments";
    ordered_json parsed;
    try {
      parsed = parse_ordered_json_limited(f["arguments"].get_ref<const std::string&>(), param, kMaxRequestDepth);
    } catch (const Error& e) {
      bad(param, e.what());
    }
    if (parsed.is_discarded() || !parsed.is_object())
      bad(param, "'arguments' must be a JSON object (as a string or an object)");
    f["arguments"] = std::move(parsed);
  } else if (!f["arguments"].is_object()) {
    bad_type(p + ".function.arguments", "a JSON object string or an object");
  }
  return out;
}

}  // namespace

ordered_json parse_template_context(const ordered_json& body) {
  ordered_json context = ordered_json::object();
  if (present(body, "tools")) {
    const ordered_json& tools = body["tools"];
    if (!tools.is_array()) bad_type("tools", "an array");
    if (tools.empty()) bad("tools", "'tools' must not be empty");
    for (size_t i = 0; i < tools.size(); ++i) check_tool(tools[i], "tools[" + std::to_string(i) + "]");
    context["tools"] = tools;
  }
  if (present(body, "tool_choice")) check_tool_choice(body["tool_choice"]);
  if (present(body, "parallel_tool_calls") && !body["parallel_tool_calls"].is_boolean())
    bad_type("parallel_tool_calls", "a boolean");
  if (present(body, "documents")) {
    const ordered_json& docs = body["documents"];
    if (!docs.is_array()) bad_type("documents", "an array");
    for (size_t i = 0; i < docs.size(); ++i)
      if (!docs[i].is_object() && !docs[i].is_string())
        bad_type("documents[" + std::to_string(i) + "]", "an object or a string");
    context["documents"] = docs;
  }
  if (present(body, "chat_template_kwargs")) {
    const ordered_json& kwargs = body["chat_template_kwargs"];
    if (!kwargs.is_object()) bad_type("chat_template_kwargs", "an object");
    if (kwargs.size() > kMaxTemplateKwargs)
      bad("chat_template_kwargs", "'chat_template_kwargs' has " + std::to_string(kwargs.size()) + " keys; at most " +
                                      std::to_string(kMaxTemplateKwargs) + " are accepted");
    static const std::set<std::string> reserved = {"messages", "add_generation_prompt", "bos_token", "eos_token"};
    for (const auto& [key, value] : kwargs.items()) {
      if (reserved.count(key) || (key == "tools" && context.contains("tools")) ||
          (key == "documents" && context.contains("documents")))
        bad("chat_template_kwargs." + key, "'" + key + "' cannot be set through chat_template_kwargs");
      context[key] = value;
    }
  }
  return context;
}

ordered_json parse_message_fields(const ordered_json& message, const std::string& role, const std::string& param) {
  ordered_json fields = ordered_json::object();
  for (const auto& [key, value] : message.items()) {
    if (key == "role" || key == "content") continue;
    const std::string p = param + "." + key;
    if (key == "name") {
      if (!value.is_string()) bad_type(p, "a string");
    } else if (key == "tool_calls" && role == "assistant") {
      if (!value.is_array()) bad_type(p, "an array");
      ordered_json calls = ordered_json::array();
      for (size_t i = 0; i < value.size(); ++i) calls.push_back(tool_call(value[i], p + "[" + std::to_string(i) + "]"));
      fields[key] = std::move(calls);
      continue;
    } else if (key == "tool_call_id" && role == "tool") {
      if (!value.is_string()) bad_type(p, "a string");
    } else {
      bad(p, "Unrecognized message field: " + key, "unknown_parameter");
    }
    fields[key] = value;
  }
  if (role == "tool" && !fields.contains("tool_call_id"))
    bad(param + ".tool_call_id", "'tool_call_id' is required", "missing_required_parameter");
  return fields;
}

}  // namespace hfstatic::server

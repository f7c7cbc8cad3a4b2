// ValidateResponsesRequest (validation.h): the OpenAI Responses API's
// checks, in its words, for what mates and the agent CLIs send. Item and
// tool types the mock does not model (reasoning, web search, namespaces of
// tools, …) pass unchecked, as a newer client's would.
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "llm/validation.h"

namespace mates::llm {
namespace responses_checks {

Status Bad(const std::string& msg) { return Status::InvalidArgument(msg); }

const Json* At(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

std::string Str(const Json& obj, const char* key) {
  const Json* v = At(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}

bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

Status CheckMessage(const Json& item, const std::string& at) {
  const std::string role = Str(item, "role");
  if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
    return Bad("Invalid value: '" + role + "'. Supported values are: 'user', 'assistant', 'system', and 'developer'. (" +
               at + ".role)");
  }
  const Json* content = At(item, "content");
  if (content == nullptr) return Bad("Missing required parameter: '" + at + ".content'.");
  if (content->is_string()) return Status::Ok();
  if (!content->is_array()) return Bad("Invalid type for '" + at + ".content': expected a string or an array.");
  for (size_t k = 0; k < content->size(); ++k) {
    const Json& part = (*content)[k];
    const std::string pat = at + ".content[" + std::to_string(k) + "]";
    const std::string type = Str(part, "type");
    if (type == "input_text" || type == "output_text") {
      const Json* text = At(part, "text");
      if (text == nullptr || !text->is_string()) return Bad("Missing required parameter: '" + pat + ".text'.");
      if (type == "output_text" && role != "assistant") {
        return Bad("Invalid value: 'output_text'. Supported values are: 'input_text', 'input_image', and "
                   "'input_file'. (" + pat + ".type)");
      }
    } else if (type.empty()) {
      return Bad("Missing required parameter: '" + pat + ".type'.");
    }
  }
  return Status::Ok();
}

Status CheckInput(const Json& input) {
  if (input.is_string()) return Status::Ok();
  if (!input.is_array()) return Bad("Invalid type for 'input': expected a string or an array of input items.");
  std::set<std::string> calls, answered;
  for (size_t i = 0; i < input.size(); ++i) {
    const Json& item = input[i];
    const std::string at = "input[" + std::to_string(i) + "]";
    if (!item.is_object()) return Bad("Invalid type for '" + at + "': expected an object.");
    std::string type = Str(item, "type");
    if (type.empty() && At(item, "role") != nullptr) type = "message";
    if (type.empty()) return Bad("Missing required parameter: '" + at + ".type'.");
    if (type == "message") {
      MATES_RETURN_IF_ERROR(CheckMessage(item, at));
    } else if (type == "function_call") {
      const std::string id = Str(item, "call_id");
      if (id.empty()) return Bad("Missing required parameter: '" + at + ".call_id'.");
      if (Str(item, "name").empty()) return Bad("Missing required parameter: '" + at + ".name'.");
      const Json* args = At(item, "arguments");
      if (args == nullptr || !args->is_string()) return Bad("Missing required parameter: '" + at + ".arguments'.");
      if (!calls.insert(id).second) return Bad("Duplicate item found with call_id " + id + ".");
    } else if (type == "function_call_output") {
      const std::string id = Str(item, "call_id");
      if (id.empty()) return Bad("Missing required parameter: '" + at + ".call_id'.");
      const Json* output = At(item, "output");
      if (output == nullptr || !(output->is_string() || output->is_array())) {
        return Bad("Missing required parameter: '" + at + ".output'.");
      }
      if (calls.count(id) == 0) return Bad("No tool call found for function call output with call_id " + id + ".");
      answered.insert(id);
    }
  }
  for (const auto& id : calls) {
    if (answered.count(id) == 0) return Bad("No tool output found for function call " + id + ".");
  }
  return Status::Ok();
}

Status CheckTools(const Json& tools) {
  if (!tools.is_array()) return Bad("Invalid type for 'tools': expected an array.");
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string at = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) return Bad("Invalid type for '" + at + "': expected an object.");
    const std::string type = Str(t, "type");
    if (type.empty()) return Bad("Missing required parameter: '" + at + ".type'.");
    if (type != "function") continue;
    const std::string name = Str(t, "name");
    if (name.empty()) return Bad("Missing required parameter: '" + at + ".name'.");
    if (!ValidFunctionName(name)) {
      return Bad("Invalid '" + at + ".name': string does not match pattern. Expected a string that matches the "
                 "pattern '^[a-zA-Z0-9_-]+$'.");
    }
    if (!names.insert(name).second) return Bad("Duplicate tool name: '" + name + "'.");
    const Json* params = At(t, "parameters");
    if (params != nullptr && !params->is_null() && !params->is_object()) {
      return Bad("Invalid type for '" + at + ".parameters': expected an object.");
    }
  }
  return Status::Ok();
}

Status Validate(const Json& body) {
  if (!body.is_object()) return Bad(std::string("the request body must be a JSON object, got ") + body.type_name());
  if (Str(body, "model").empty()) return Bad("Missing required parameter: 'model'.");
  const Json* input = At(body, "input");
  if (input == nullptr) return Bad("Missing required parameter: 'input'.");
  if (At(body, "previous_response_id") != nullptr && !At(body, "previous_response_id")->is_null()) {
    return Bad("Previous response with id '" + Str(body, "previous_response_id") +
               "' not found. (mates mock-llm stores no response: send the whole input with store: false)");
  }
  MATES_RETURN_IF_ERROR(CheckInput(*input));
  if (const Json* tools = At(body, "tools"); tools != nullptr) MATES_RETURN_IF_ERROR(CheckTools(*tools));
  if (const Json* instructions = At(body, "instructions");
      instructions != nullptr && !instructions->is_null() && !instructions->is_string()) {
    return Bad("Invalid type for 'instructions': expected a string.");
  }
  if (const Json* max = At(body, "max_output_tokens"); max != nullptr && !max->is_null()) {
    if (!max->is_number_integer()) return Bad("Invalid type for 'max_output_tokens': expected an integer.");
    if (max->get<int64_t>() < 16) {
      return Bad("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got " +
                 std::to_string(max->get<int64_t>()) + " instead.");
    }
  }
  if (const Json* stream = At(body, "stream"); stream != nullptr && !stream->is_null() && !stream->is_boolean()) {
    return Bad("Invalid type for 'stream': expected a boolean.");
  }
  return Status::Ok();
}

}  // namespace responses_checks

Status ValidateResponsesRequest(const Json& body) { return responses_checks::Validate(body); }

}  // namespace mates::llm

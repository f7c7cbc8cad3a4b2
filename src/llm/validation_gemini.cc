// ValidateGeminiRequest (validation.h): the Gemini API's checks on a
// generateContent body, in its words: contents, their parts, function
// calls answered in the very next turn part for part, thought signatures
// sent back on a Gemini 3 model's calls of the current turn, function
// declarations.
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "llm/validation.h"

namespace mates::llm {
namespace gemini_checks {

Status Bad(const std::string& msg) { return Status::InvalidArgument(msg); }

const Json* At(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// Gemini's function names: a letter or underscore first, then letters,
// digits, underscores, dots, colons and dashes, at most 128.
bool ValidFunctionName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != ':' && c != '-') return false;
  }
  return true;
}

constexpr const char* kPartKinds[] = {"text", "inlineData", "fileData", "functionCall", "functionResponse",
                                      "executableCode", "codeExecutionResult"};

struct TurnShape {
  int calls = 0, responses = 0, texts = 0;
  bool first_call_signed = true;  // the first functionCall part carries a thoughtSignature
  std::string first_call;         // its function's name
};

Result<TurnShape> CheckParts(const Json& parts, const std::string& at) {
  if (!parts.is_array() || parts.empty()) {
    return Bad("* GenerateContentRequest." + at + ".parts: contents.parts must not be empty.");
  }
  TurnShape shape;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Json& p = parts[k];
    const std::string pat = at + ".parts[" + std::to_string(k) + "]";
    if (!p.is_object()) return Bad("Invalid value at '" + pat + "': expected an object.");
    int kinds = 0;
    for (const char* kind : kPartKinds) kinds += At(p, kind) != nullptr ? 1 : 0;
    if (kinds == 0 && At(p, "thought") == nullptr && At(p, "thoughtSignature") == nullptr) {
      return Bad("* GenerateContentRequest." + pat + ".data: required oneof field 'data' must have one initialized "
                 "field");
    }
    if (kinds > 1) return Bad("* GenerateContentRequest." + pat + ": only one of the data fields can be set");
    if (const Json* text = At(p, "text"); text != nullptr) {
      if (!text->is_string()) return Bad("Invalid value at '" + pat + ".text': expected a string.");
      ++shape.texts;
    }
    if (const Json* call = At(p, "functionCall"); call != nullptr) {
      const Json* name = At(*call, "name");
      if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
        return Bad("* GenerateContentRequest." + pat + ".function_call.name: Name cannot be empty.");
      }
      const Json* args = At(*call, "args");
      if (args != nullptr && !args->is_null() && !args->is_object()) {
        return Bad("Invalid value at '" + pat + ".function_call.args': expected an object.");
      }
      if (shape.calls == 0) {
        shape.first_call_signed = At(p, "thoughtSignature") != nullptr;
        shape.first_call = name->get<std::string>();
      }
      ++shape.calls;
    }
    if (const Json* resp = At(p, "functionResponse"); resp != nullptr) {
      const Json* name = At(*resp, "name");
      if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
        return Bad("* GenerateContentRequest." + pat + ".function_response.name: Name cannot be empty.");
      }
      const Json* response = At(*resp, "response");
      if (response == nullptr || !response->is_object()) {
        return Bad("* GenerateContentRequest." + pat + ".function_response.response: must be an object.");
      }
      ++shape.responses;
    }
  }
  return shape;
}

Status CheckContents(const Json& contents, bool signatures_required) {
  if (!contents.is_array() || contents.empty()) {
    return Bad("* GenerateContentRequest.contents: contents is not specified");
  }
  std::vector<TurnShape> shapes;
  std::vector<std::string> roles;
  for (size_t i = 0; i < contents.size(); ++i) {
    const Json& c = contents[i];
    const std::string at = "contents[" + std::to_string(i) + "]";
    if (!c.is_object()) return Bad("Invalid value at '" + at + "': expected an object.");
    std::string role = "user";
    if (const Json* r = At(c, "role"); r != nullptr && r->is_string() && !r->get<std::string>().empty()) {
      role = r->get<std::string>();
    }
    if (role != "user" && role != "model" && role != "function") {
      return Bad("Please use a valid role: user, model.");
    }
    const Json* parts = At(c, "parts");
    MATES_ASSIGN_OR_RETURN(TurnShape shape, CheckParts(parts == nullptr ? Json() : *parts, at));
    if (role == "model" && shape.responses > 0) {
      return Bad("Please ensure that function response turn comes immediately after a function call turn.");
    }
    shapes.push_back(shape);
    roles.push_back(role);
  }
  // Each call turn answered part for part in the next turn; each answer
  // right after its calls.
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].responses > 0 && (i == 0 || shapes[i - 1].calls == 0)) {
      return Bad("Please ensure that function response turn comes immediately after a function call turn.");
    }
    if (shapes[i].calls > 0 && i + 1 < shapes.size() && shapes[i + 1].responses != shapes[i].calls) {
      return Bad("Please ensure that the number of function response parts is equal to the number of function call "
                 "parts of the function call turn.");
    }
  }
  if (!signatures_required) return Status::Ok();
  // The current turn: from the last user content with text on.
  size_t start = 0;
  for (size_t i = shapes.size(); i-- > 0;) {
    if (roles[i] != "model" && shapes[i].texts > 0 && shapes[i].responses == 0) {
      start = i;
      break;
    }
  }
  for (size_t i = start; i < shapes.size(); ++i) {
    if (roles[i] == "model" && shapes[i].calls > 0 && !shapes[i].first_call_signed) {
      return Bad("Function call is missing a thought_signature in functionCall parts. This is required for tools to "
                 "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
                 "data, function call `default_api:" +
                 shapes[i].first_call + "` , position " + std::to_string(i + 1) +
                 ". Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.");
    }
  }
  return Status::Ok();
}

Status CheckTools(const Json& tools) {
  if (!tools.is_array()) return Bad("Invalid value at 'tools': expected a list.");
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    if (!t.is_object()) return Bad("Invalid value at 'tools[" + std::to_string(i) + "]': expected an object.");
    const Json* decls = At(t, "functionDeclarations");
    if (decls == nullptr) continue;  // googleSearch, codeExecution, …
    if (!decls->is_array()) return Bad("Invalid value at 'tools[" + std::to_string(i) + "].function_declarations'.");
    for (size_t k = 0; k < decls->size(); ++k) {
      const Json& d = (*decls)[k];
      const std::string at = "tools[" + std::to_string(i) + "].function_declarations[" + std::to_string(k) + "]";
      const Json* name = At(d, "name");
      const std::string n = name != nullptr && name->is_string() ? name->get<std::string>() : "";
      if (!ValidFunctionName(n)) {
        return Bad("* GenerateContentRequest." + at +
                   ".name: Invalid function name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, "
                   "or contain underscores, dots, colons and dashes, with a maximum length of 128.");
      }
      if (!names.insert(n).second) return Bad("* GenerateContentRequest.tools: Duplicate function declaration: " + n);
      for (const char* key : {"parameters", "parametersJsonSchema"}) {
        const Json* schema = At(d, key);
        if (schema != nullptr && !schema->is_object()) {
          return Bad("Invalid value at '" + at + "." + key + "': expected an object.");
        }
      }
    }
  }
  return Status::Ok();
}

Status Validate(const Json& body, const std::string& model) {
  if (!body.is_object()) return Bad(std::string("the request body must be a JSON object, got ") + body.type_name());
  const Json* contents = At(body, "contents");
  MATES_RETURN_IF_ERROR(CheckContents(contents == nullptr ? Json() : *contents, model.rfind("gemini-3", 0) == 0));
  if (const Json* sys = At(body, "systemInstruction"); sys != nullptr && !sys->is_null()) {
    const Json* parts = At(*sys, "parts");
    if (parts == nullptr) return Bad("Invalid value at 'system_instruction': parts are required.");
    MATES_RETURN_IF_ERROR(CheckParts(*parts, "system_instruction").status());
  }
  if (const Json* tools = At(body, "tools"); tools != nullptr) MATES_RETURN_IF_ERROR(CheckTools(*tools));
  if (const Json* config = At(body, "generationConfig"); config != nullptr && !config->is_object()) {
    return Bad("Invalid value at 'generation_config': expected an object.");
  }
  return Status::Ok();
}

}  // namespace gemini_checks

Status ValidateGeminiRequest(const Json& body, const std::string& model) {
  return gemini_checks::Validate(body, model);
}

}  // namespace mates::llm

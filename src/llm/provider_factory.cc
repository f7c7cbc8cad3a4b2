#include "llm/provider_factory.h"

#include <cstdlib>
#include <vector>

#include "core/secrets.h"
#include "llm/anthropic.h"
#include "llm/gemini.h"
#include "llm/openai.h"
#include "llm/openai_responses.h"
#include "llm/scripted.h"

namespace mates::llm {
namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// Where an HTTP provider's settings come from besides the flags.
struct HttpSettings {
  std::vector<const char*> keys;  // the first one set is the key
  const char* base_url_variable;
  const char* public_host;        // its public API, which needs a key
  const char* missing_key;        // what to say when it has none
};

// `Options`' own defaults are the public API's URL and a model.
template <typename Options, typename P>
Result<std::unique_ptr<Provider>> MakeHttp(const HttpSettings& s, const ProviderConfig& config,
                                           const std::string& model) {
  Options o;
  for (const char* key : s.keys) {
    if (o.api_key.empty()) o.api_key = Secrets::Get(key);
  }
  const std::string base = !config.base_url.empty() ? config.base_url : Env(s.base_url_variable);
  if (!base.empty()) o.base_url = base;
  if (!model.empty()) o.model = model;
  o.request_timeout_s = config.request_timeout_s;
  if (o.api_key.empty() && o.base_url.find(s.public_host) != std::string::npos) {
    return Status::InvalidArgument(s.missing_key);
  }
  return std::unique_ptr<Provider>(new P(std::move(o), NewCurlTransport()));
}

}  // namespace

Result<std::unique_ptr<Provider>> MakeProvider(const ProviderConfig& config) {
  std::string kind = config.kind;
  if (kind.empty()) {
    if (!Secrets::Get("ANTHROPIC_API_KEY").empty()) {
      kind = "anthropic";
    } else {
      return Status::InvalidArgument(
          "no model provider chosen: set ANTHROPIC_API_KEY for Anthropic, or pass --provider "
          "openai --base-url URL (an OpenAI-compatible server such as Ollama), or --provider "
          "scripted --scenario FILE (offline)");
    }
  }
  std::string model = !config.model.empty() ? config.model : Env("MATES_MODEL");
  if (kind == "anthropic") {
    return MakeHttp<AnthropicOptions, AnthropicProvider>(
        {{"ANTHROPIC_API_KEY"}, "ANTHROPIC_BASE_URL", "api.anthropic.com",
         "the anthropic provider needs ANTHROPIC_API_KEY"},
        config, model);
  }
  if (kind == "openai") {
    return MakeHttp<OpenAIOptions, OpenAIProvider>(
        {{"OPENAI_API_KEY"}, "OPENAI_BASE_URL", "api.openai.com",
         "the openai provider needs OPENAI_API_KEY for api.openai.com (local servers need --base-url, e.g. "
         "http://127.0.0.1:11434/v1 for Ollama)"},
        config, model);
  }
  if (kind == "openai-responses") {
    return MakeHttp<ResponsesOptions, ResponsesProvider>(
        {{"OPENAI_API_KEY"}, "OPENAI_BASE_URL", "api.openai.com",
         "the openai-responses provider needs OPENAI_API_KEY for api.openai.com"},
        config, model);
  }
  if (kind == "gemini") {
    return MakeHttp<GeminiOptions, GeminiProvider>(
        {{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, "GOOGLE_GEMINI_BASE_URL", "googleapis.com",
         "the gemini provider needs GEMINI_API_KEY (or GOOGLE_API_KEY)"},
        config, model);
  }
  if (kind == "scripted") {
    if (config.scenario.empty()) {
      return Status::InvalidArgument("the scripted provider needs --scenario FILE");
    }
    MATES_ASSIGN_OR_RETURN(Scenario sc, Scenario::Load(config.scenario));
    return std::unique_ptr<Provider>(new ScriptedProvider(
        std::make_shared<Scenario>(std::move(sc)), model.empty() ? "scripted" : model));
  }
  return Status::InvalidArgument("unknown provider '" + kind +
                                 "' (valid: anthropic, openai, openai-responses, gemini, scripted)");
}

Status PreflightCall(Provider& provider, const std::string& model) {
  Request req;
  req.model = model;
  req.max_tokens = 16;
  req.cache = false;
  req.messages.push_back({Role::kUser, {ContentBlock::Text("Reply with the word: ok")}});
  CancelToken cancel;
  StreamCallbacks cb;
  Status first_failure;
  cb.on_retry = [&](int, int, const Status& why, double) {
    first_failure = why;
    cancel.Cancel();
  };
  auto r = provider.Complete(req, cb, &cancel);
  if (r.ok()) return Status::Ok();
  return first_failure.ok() ? r.status() : first_failure;
}

}  // namespace mates::llm

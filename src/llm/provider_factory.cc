#include "llm/provider_factory.h"

#include <cstdlib>

#include "core/secrets.h"
#include "llm/anthropic.h"
#include "llm/openai.h"
#include "llm/scripted.h"

namespace mates::llm {
namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
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
    AnthropicOptions o;
    o.api_key = Secrets::Get("ANTHROPIC_API_KEY");
    o.base_url = !config.base_url.empty() ? config.base_url : Env("ANTHROPIC_BASE_URL");
    if (o.base_url.empty()) o.base_url = "https://api.anthropic.com";
    if (!model.empty()) o.model = model;
    o.request_timeout_s = config.request_timeout_s;
    if (o.api_key.empty() && o.base_url.find("api.anthropic.com") != std::string::npos) {
      return Status::InvalidArgument("the anthropic provider needs ANTHROPIC_API_KEY");
    }
    return std::unique_ptr<Provider>(new AnthropicProvider(o, NewCurlTransport()));
  }
  if (kind == "openai") {
    OpenAIOptions o;
    o.api_key = Secrets::Get("OPENAI_API_KEY");
    o.base_url = !config.base_url.empty() ? config.base_url : Env("OPENAI_BASE_URL");
    if (o.base_url.empty()) o.base_url = "https://api.openai.com/v1";
    if (!model.empty()) o.model = model;
    o.request_timeout_s = config.request_timeout_s;
    if (o.api_key.empty() && o.base_url.find("api.openai.com") != std::string::npos) {
      return Status::InvalidArgument(
          "the openai provider needs OPENAI_API_KEY for api.openai.com (local servers need "
          "--base-url, e.g. http://127.0.0.1:11434/v1 for Ollama)");
    }
    return std::unique_ptr<Provider>(new OpenAIProvider(o, NewCurlTransport()));
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
                                 "' (valid: anthropic, openai, scripted)");
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

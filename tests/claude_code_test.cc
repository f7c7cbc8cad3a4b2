// A real client: the Claude Code CLI (npm @anthropic-ai/claude-code, which
// ./scripts/test installs into .cache/npm) run as `claude -p` against
// `mates mock-llm` prints the scenario's reply. Without the package the test
// is skipped, loudly.
#include <gtest/gtest.h>
#include <signal.h>

#include "core/clock.h"
#include "support/test_util.h"

namespace mates {
namespace {

std::string ClaudeBinary() {
  const char* cache = std::getenv("MATES_CACHE_DIR");
  fs::path dir = cache != nullptr ? fs::path(cache) : fs::path(MATES_SOURCE_DIR) / ".cache";
  return (dir / "npm/node_modules/.bin/claude").string();
}

TEST(ClaudeCodeTest, PrintsTheScenarioReplyThroughMockLlm) {
  std::string claude = ClaudeBinary();
  if (!fs::exists(claude)) {
    GTEST_SKIP() << "\n*** SKIPPED LOUDLY: the Claude Code CLI is not installed at " << claude
                 << " (./scripts/test installs it with npm; it could not be installed here) ***";
  }
  testing::TempDir dir;
  testing::WriteAll(dir.path() / "s.yaml", R"(
rules:
  - when: "say hello"
    once: false
    reply:
      - {type: text, text: "Hello from the mates mock scenario!"}
default_reply:
  - {type: text, text: "mock default"}
)");
  auto mock = testing::Start({testing::MatesBinary(), "mock-llm", "--scenario",
                              (dir.path() / "s.yaml").string(), "--record",
                              (dir.path() / "rec.jsonl").string(), "--quiet"});
  auto line = mock.ReadLine(DeadlineIn(10));
  ASSERT_TRUE(line.ok());
  std::string url = line->substr(std::string("listening on ").size());
  fs::create_directories(dir.path() / "home");
  SubprocessOptions o;
  o.argv = {claude, "-p", "please say hello"};
  o.env = std::vector<std::string>{"HOME=" + (dir.path() / "home").string(),
                                   "PATH=/usr/local/bin:/usr/bin:/bin",
                                   "ANTHROPIC_BASE_URL=" + url,
                                   "ANTHROPIC_API_KEY=sk-test-not-a-real-key",
                                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
                                   "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1"};
  o.cwd = dir.str();
  o.timeout_s = 120;
  auto r = RunSubprocess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("Hello from the mates mock scenario!"), std::string::npos)
      << r->out << r->err;
  mock.Signal(SIGTERM);
  EXPECT_EQ(mock.Wait().exit_code, 0);
  // The mock saw a real client's request and accepted it.
  std::string rec = testing::ReadAll(dir.path() / "rec.jsonl");
  EXPECT_NE(rec.find(R"("status":200)"), std::string::npos);
  EXPECT_EQ(rec.find(R"("status":400)"), std::string::npos) << rec.substr(0, 2000);
}

}  // namespace
}  // namespace mates

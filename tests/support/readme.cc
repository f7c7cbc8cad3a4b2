// See readme.h.
#include "support/readme.h"

#include <iostream>
#include <regex>
#include <sstream>

#include "support/test_util.h"

namespace mates::testing {

fs::path SourceRoot() { return fs::path(ScenarioFixture("x")).parent_path().parent_path().parent_path(); }

std::vector<std::string> ReadmeBlock(const std::string& heading, const std::string& fence) {
  const std::string readme = ReadAll(SourceRoot() / "README.md");
  size_t at = readme.find("\n## " + heading + "\n");
  if (at == std::string::npos) return {};
  at = readme.find(fence, at);
  if (at == std::string::npos || at > readme.find("\n## ", at - fence.size() + 1)) return {};
  const size_t end = readme.find("```", at + fence.size());
  std::vector<std::string> lines;
  std::istringstream in(readme.substr(at + fence.size(), end - at - fence.size()));
  for (std::string line; std::getline(in, line);) {
    line = std::regex_replace(line, std::regex("\\s{2,}#.*$"), "");
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string ScriptOf(const std::vector<std::string>& block, const std::string& claude_missing, int* lines,
                     const std::function<std::string(const std::string&)>& adapt) {
  std::string script;
  for (std::string line : block) {
    // `mates claude …` reads Claude Code's files: it needs no Claude Code.
    if (!claude_missing.empty() && line.find(" claude ") != std::string::npos && line.rfind("mates claude ", 0) != 0) {
      std::cerr << "*** NOT RUN LOUDLY: Claude Code is not installed at " << claude_missing << ": " << line << "\n";
      continue;
    }
    ++*lines;
    const std::string quoted = "'" + std::regex_replace(line, std::regex("'"), "'\\''") + "'";
    const std::string failed = " || { echo FAILED: " + quoted + " >&2; exit 1; }\n";
    if (adapt) line = adapt(line);
    std::smatch port;
    if (std::regex_match(line, std::regex("(cd |export |[A-Za-z_]+=\\S*$).*"))) {
      script += line + "\n";  // a variable, or a cd
    } else if (std::regex_search(line, port, std::regex("--port (\\d+) &$"))) {
      script += line + "\nfor i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/" + port[1].str() +
                ") 2>/dev/null && break; sleep 0.1; done\n";
    } else if (line.find("cluster attach") != std::string::npos) {
      script += "timeout 3 script -qec \"" + line + "\" /dev/null >/dev/null; [ $? -eq 124 ]" + failed;
    } else if (line.find("--watch") != std::string::npos || line.find("--follow") != std::string::npos ||
               line.find("mates dashboard") != std::string::npos) {
      script += "timeout 3 " + line + " >/dev/null; [ $? -eq 124 ]" + failed;
    } else {
      script += line + " </dev/null" + failed;
    }
  }
  return script;
}

}  // namespace mates::testing

// read_file, write_file, edit_file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/files.h"
#include "tools/builtin_tools.h"
#include "tools/paths.h"

namespace mates::tools {
namespace {

constexpr size_t kMaxLine = 2000;         // characters shown of one line
constexpr size_t kMaxReadOutput = 100 * 1024;  // characters of read_file output
constexpr off_t kMaxEditSize = 10 * 1024 * 1024;

// True if the first bytes look binary: a NUL byte.
bool LooksBinary(const std::string& head) { return head.find('\0') != std::string::npos; }

std::string CountLines(const std::string& s) {
  size_t n = s.empty() ? 0 : static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) +
                                 (s.back() == '\n' ? 0 : 1);
  return std::to_string(n) + (n == 1 ? " line" : " lines");
}

class ReadFileTool : public Tool {
 public:
  std::string name() const override { return "read_file"; }
  std::string description() const override {
    return "Read a text file in the workspace. The output shows each line with its number "
           "(like `cat -n`): those numbers are not part of the file, so leave them out of "
           "edit_file's old_text. Paths are relative to the workspace root. By default the first "
           "2000 lines are shown; use `offset` (1-based line) and `limit` to read further in "
           "large files. Binary files are not shown.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "path":{"type":"string","description":"File path relative to the workspace root"},
      "offset":{"type":"integer","description":"First line to show, 1-based (default 1)","minimum":1},
      "limit":{"type":"integer","description":"Number of lines to show (default 2000)","minimum":1}},
      "required":["path"]})S";
  }
  bool read_only() const override { return true; }

  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string path = in.String("path", true);
    auto offset = static_cast<int64_t>(in.Number("offset", 1, 1, 1e12));
    auto limit = static_cast<int64_t>(in.Number("limit", 2000, 1, 100000));
    if (!in.ok()) return ToolResult::Error(in.errors());
    auto full = ResolveInWorkspace(ctx.WorkRoot(), path, /*for_write=*/false);
    if (!full.ok()) return ToolResult::Error(full.status().message());
    std::error_code ec;
    if (fs::is_directory(*full, ec)) {
      return ToolResult::Error("'" + path + "' is a folder; list it with bash (ls " + path + ")");
    }
    std::ifstream f(*full, std::ios::binary);
    if (!f) return ToolResult::Error("no such file: '" + path + "'");
    uintmax_t size = fs::file_size(*full, ec);
    std::string head(8192, '\0');
    f.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(f.gcount()));
    if (LooksBinary(head)) {
      return ToolResult::Error("'" + path + "' is a binary file (" + std::to_string(size) +
                               " bytes); it is not shown. Use bash (file, xxd, …) to inspect it.");
    }
    if (size == 0) return ToolResult::Ok("(empty file)");
    f.clear();
    f.seekg(0);
    std::string out, line;
    int64_t n = 0, shown = 0;
    bool cut = false;
    while (std::getline(f, line)) {
      ++n;
      if (n < offset) continue;
      if (shown >= limit || out.size() > kMaxReadOutput) {
        cut = true;
        continue;  // keep counting lines for the footer
      }
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.size() > kMaxLine) line = line.substr(0, kMaxLine) + " … [line cut]";
      char num[32];
      std::snprintf(num, sizeof num, "%6lld\t", static_cast<long long>(n));
      out += num + line + "\n";
      ++shown;
    }
    if (offset > n) {
      return ToolResult::Error("offset " + std::to_string(offset) + " is past the end: '" + path +
                               "' has " + std::to_string(n) + " lines");
    }
    if (cut) {
      out += "(showing lines " + std::to_string(offset) + "-" + std::to_string(offset + shown - 1) +
             " of " + std::to_string(n) + "; use offset to read more)\n";
    }
    return ToolResult::Ok(out);
  }
};

class WriteFileTool : public Tool {
 public:
  std::string name() const override { return "write_file"; }
  std::string description() const override {
    return "Create or overwrite a file in the workspace with the given content (the whole file). "
           "Missing folders are created. The file is replaced atomically. Prefer edit_file to "
           "change part of an existing file.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "path":{"type":"string","description":"File path relative to the workspace root"},
      "content":{"type":"string","description":"The complete new content of the file"}},
      "required":["path","content"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string path = in.String("path", true);
    std::string content = in.String("content", true);
    if (!in.ok()) return ToolResult::Error(in.errors());
    auto full = ResolveInWorkspace(ctx.WorkRoot(), path, /*for_write=*/true);
    if (!full.ok()) return ToolResult::Error(full.status().message());
    std::error_code ec;
    if (fs::is_directory(*full, ec)) return ToolResult::Error("'" + path + "' is a folder");
    bool existed = fs::exists(*full, ec);
    Status s = EnsureDir(full->parent_path());
    if (s.ok()) s = WriteFileAtomic(*full, content);
    if (!s.ok()) return ToolResult::Error("could not write '" + path + "': " + s.message());
    return ToolResult::Ok(std::string(existed ? "Overwrote " : "Created ") + path + " (" +
                          std::to_string(content.size()) + " bytes, " + CountLines(content) + ")");
  }
};

class EditFileTool : public Tool {
 public:
  std::string name() const override { return "edit_file"; }
  std::string description() const override {
    return "Replace exact text in an existing file. old_text must match the file exactly "
           "(whitespace and indentation included, without read_file's line numbers) and must "
           "occur exactly once, unless replace_all is true; include a few surrounding lines to "
           "make it unique. To create a file, use write_file.";
  }
  std::string input_schema() const override {
    return R"S({"type":"object","properties":{
      "path":{"type":"string","description":"File path relative to the workspace root"},
      "old_text":{"type":"string","description":"The exact text to replace"},
      "new_text":{"type":"string","description":"The text to put in its place"},
      "replace_all":{"type":"boolean","description":"Replace every occurrence (default false)"}},
      "required":["path","old_text","new_text"]})S";
  }
  ToolResult Run(const Json& input, ToolContext& ctx) const override {
    InputReader in(input);
    std::string path = in.String("path", true);
    std::string old_text = in.String("old_text", true);
    std::string new_text = in.String("new_text", true);
    bool all = in.Bool("replace_all", false);
    if (!in.ok()) return ToolResult::Error(in.errors());
    if (old_text.empty()) return ToolResult::Error("old_text is empty; to write a whole file use write_file");
    if (old_text == new_text) return ToolResult::Error("old_text and new_text are the same: nothing to change");
    auto full = ResolveInWorkspace(ctx.WorkRoot(), path, /*for_write=*/true);
    if (!full.ok()) return ToolResult::Error(full.status().message());
    std::error_code ec;
    if (!fs::is_regular_file(*full, ec)) {
      return ToolResult::Error("no such file: '" + path + "' (edit_file changes existing files; "
                               "use write_file to create one)");
    }
    if (static_cast<off_t>(fs::file_size(*full, ec)) > kMaxEditSize) {
      return ToolResult::Error("'" + path + "' is larger than 10 MB; edit it with bash");
    }
    auto data = ReadFile(*full);
    if (!data.ok()) return ToolResult::Error(data.status().message());
    if (LooksBinary(data->substr(0, 8192))) return ToolResult::Error("'" + path + "' is a binary file");
    size_t count = 0;
    for (size_t pos = data->find(old_text); pos != std::string::npos;
         pos = data->find(old_text, pos + old_text.size())) {
      ++count;
    }
    if (count == 0) {
      return ToolResult::Error("old_text was not found in '" + path +
                               "'. It must match exactly, whitespace included; read the file "
                               "again and copy the text without line numbers.");
    }
    if (count > 1 && !all) {
      return ToolResult::Error("old_text occurs " + std::to_string(count) + " times in '" + path +
                               "'; add surrounding lines to make it unique, or set replace_all");
    }
    std::string out;
    out.reserve(data->size());
    size_t from = 0;
    for (size_t pos = data->find(old_text); pos != std::string::npos;
         pos = data->find(old_text, from)) {
      out.append(*data, from, pos - from);
      out += new_text;
      from = pos + old_text.size();
      if (!all) break;
    }
    out.append(*data, from, std::string::npos);
    Status s = WriteFileAtomic(*full, out);
    if (!s.ok()) return ToolResult::Error("could not write '" + path + "': " + s.message());
    return ToolResult::Ok("Replaced " + std::to_string(all ? count : 1) + " occurrence" +
                          ((all ? count : 1) == 1 ? "" : "s") + " in " + path);
  }
};

}  // namespace

std::unique_ptr<Tool> MakeReadFileTool() { return std::make_unique<ReadFileTool>(); }
std::unique_ptr<Tool> MakeWriteFileTool() { return std::make_unique<WriteFileTool>(); }
std::unique_ptr<Tool> MakeEditFileTool() { return std::make_unique<EditFileTool>(); }

}  // namespace mates::tools

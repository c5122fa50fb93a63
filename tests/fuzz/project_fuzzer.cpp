// libFuzzer target for the project loader (engine/project/project.h). Each input is parsed as a
// project file's text, as load_project does after reading the file, both with Full validation and
// with Structure (the editor's: a graph with shape errors loads). The loader must reject it with a
// shardlab::Error whose message starts with the file name it was given, or accept it; an accepted
// project must save (to_json_string) to text that loads again to the same text, and the shape
// analysis of an accepted one must report, never throw. Any other exception, a crash, a sanitizer
// report or a leak is a finding. Fuzzed with -DSHARDLAB_FUZZ=ON and clang; the default suite
// replays the corpus (tests/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/project/project.h"
#include "engine/util/error.h"

using namespace shardlab;
using namespace shardlab::project;

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "project_fuzzer: %s\n", what.c_str());
  std::abort();
}

void load(const std::string& text, Validation v, const char* mode) {
  Project p;
  try {
    p = parse_project(text, "fuzz-input", v);
  } catch (const Error& e) {
    if (std::string_view(e.what()).rfind("fuzz-input: ", 0) != 0)
      finding(std::string(mode) + ": error without the file name: " + e.what());
    return;
  }
  // Accepted: what it saves must load again (same validation) and save to the same text.
  const std::string saved = to_json_string(p);
  std::string again;
  try {
    again = to_json_string(parse_project(saved, "saved", v));
  } catch (const Error& e) {
    finding(std::string(mode) + ": an accepted project does not load once saved: " + e.what());
  }
  if (again != saved) finding(std::string(mode) + ": saving a loaded save changed it:\n" + saved + "\n---\n" + again);
  analyze_project(p);  // reports shape errors in its result; throwing anything is a finding
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  load(text, Validation::Full, "full");
  load(text, Validation::Structure, "structure");
  return 0;
}

# Writes README.md into a C++ source as one raw string (readmeMarkdown()), for Help > User Guide.
# Run by ui/CMakeLists.txt: cmake -DREADME=<README.md> -DOUT=<readme_text.cpp> -P embed_readme.cmake
file(READ "${README}" text)
set(delimiter "shardlab_readme")
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${README} contains the raw-string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUT}.tmp" "// Generated from README.md by ui/help/embed_readme.cmake at build time; do not edit.
#include \"ui/help/readme_text.h\"

namespace shardlab::ui {

const char* readmeMarkdown() {
  return R\"${delimiter}(${text})${delimiter}\";
}

}  // namespace shardlab::ui
")
file(RENAME "${OUT}.tmp" "${OUT}")

// The README.md this program was built from, as UTF-8 Markdown: generated into the build by
// ui/help/embed_readme.cmake, so Help > User Guide is always the README's own words.
#pragma once

namespace shardlab::ui {

const char* readmeMarkdown();

}  // namespace shardlab::ui

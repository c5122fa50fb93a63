// File > Import Hugging Face Model: a model folder as a project and its step-0 checkpoint
// (engine/import/hf_import.h), for the desktop UI.
#pragma once

#include <string>
#include <vector>

namespace shardlab::api {

struct ImportedProject {
  std::string project_file;  // the project written
  std::string checkpoint;    // its step-0 checkpoint folder
  std::vector<std::string> notes;  // what was converted on the way
};

// Throws Error naming the file and field or tensor at fault. The project file is replaced if it
// exists (the save dialog asked); a checkpoint already beside it is refused.
ImportedProject import_hf_model(const std::string& folder, const std::string& project_file);

}  // namespace shardlab::api

// shardlab-cli import: a Hugging Face model folder as a project and its step-0 checkpoint.
#include <cstdio>

#include "app/cli/commands.h"
#include "engine/import/hf_import.h"

namespace shardlab::cli {

int run_import(const ImportArgs& a) {
  importer::ImportOptions o;
  o.seq = a.seq;
  importer::ImportedModel m = importer::import_hf_folder(a.path, o);
  const std::vector<std::string> notes = m.notes;
  const size_t arrays = m.params.size();
  size_t count = 0;
  for (const auto& [path, t] : m.params) count += t.data.size();
  const std::filesystem::path step = importer::write_imported(std::move(m), a.out);
  std::printf("wrote %s (%zu parameters in %zu arrays) and its weights as the checkpoint %s\n", a.out.c_str(), count, arrays,
              step.string().c_str());
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  std::printf("train it from there with: shardlab-cli train %s --continue\n", a.out.c_str());
  return 0;
}

}  // namespace shardlab::cli

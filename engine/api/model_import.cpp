#include "engine/api/model_import.h"

#include "engine/import/hf_import.h"

namespace shardlab::api {

ImportedProject import_hf_model(const std::string& folder, const std::string& project_file) {
  importer::ImportedModel m = importer::import_hf_folder(folder);
  ImportedProject r;
  r.notes = m.notes;
  r.project_file = project_file;
  r.checkpoint = importer::write_imported(std::move(m), project_file, /*overwrite_project=*/true).string();
  return r;
}

}  // namespace shardlab::api

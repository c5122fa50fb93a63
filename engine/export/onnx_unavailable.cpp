// Stands in for onnx_export.cpp where CMake found no ONNX (libonnx-dev) or protobuf, so that the
// engine, the CLI and the GUI build all the same and say why an ONNX export cannot be made.
#include "engine/export/onnx_export.h"

#include "engine/util/error.h"

namespace shardlab::exporter {

namespace {
[[noreturn]] void refuse() {
  throw Error("ONNX export: this Shardlab was built without ONNX (install libonnx-dev and libprotobuf-dev, then "
              "configure and build again)");
}
}  // namespace

bool onnx_available() { return false; }

OnnxModel onnx_model(const project::Project&, const std::map<std::string, Tensor>&, const std::string&, DType) { refuse(); }
OnnxModel onnx_model(const project::Project&, const graph::GraphReport&, const std::map<std::string, Tensor>&,
                     const std::string&, DType) {
  refuse();
}
std::string export_onnx(const project::Project&, const std::map<std::string, Tensor>&, const std::filesystem::path&,
                        const std::string&, DType) {
  refuse();
}

}  // namespace shardlab::exporter

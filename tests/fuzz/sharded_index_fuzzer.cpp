// libFuzzer target for the sharded checkpoint's index (model.safetensors.index.json, read by
// read_model in engine/checkpoint/sharded.h). A fixed model is written once with write_model into
// a scratch directory as shards; each input then replaces the index there and read_model reads
// the directory, so the index is checked against real shards. The reader must reject it with a
// shardlab::Error whose message starts with the directory (every error names the file at fault),
// or accept it; an accepted index must give back exactly the model written, each tensor from the
// shard that holds it. Any other exception, a crash, a sanitizer report or a leak is a finding.
//
// With SHARDLAB_FUZZ_WRITE_INDEX=FILE set, the index write_model wrote for the fixed model is
// copied to FILE: make_sharded_index_corpus.py takes its valid seed from there.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <system_error>

#include "engine/checkpoint/sharded.h"
#include "engine/util/error.h"

using namespace shardlab;
using namespace shardlab::checkpoint;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "sharded_index_fuzzer: %s\n", what.c_str());
  std::abort();
}

StoredTensor tensor(const std::string& name, StoredDType dtype, Shape shape) {
  StoredTensor t{name, dtype, shape, {}};
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.bytes.resize(size_t(n) * dtype_size(dtype));
  for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = uint8_t(i * 7 + name.size());
  return t;
}

// read_model gives the first listed shard's metadata: the model's, plus that shard's own checksums.
std::map<std::string, std::string> without_checksums(std::map<std::string, std::string> m) {
  std::erase_if(m, [](const auto& kv) { return kv.first.rfind("crc32c.", 0) == 0; });
  return m;
}

// A checkpoint-like model in three shards of at most 40 bytes of tensor data each.
struct Fixture {
  fs::path dir;
  SafetensorsFile model;
  std::map<std::string, std::string> shard_of;  // tensor -> the shard write_model put it in
  std::map<std::string, std::string> metadata;  // the model's, as every shard holds it

  Fixture() {
    std::string templ = (fs::temp_directory_path() / "sharded_index_fuzzer.XXXXXX").string();
    if (!mkdtemp(templ.data())) finding("cannot make a scratch directory under " + fs::temp_directory_path().string());
    dir = templ;
    model.metadata = {{"format", "pt"}};
    model.tensors = {tensor("params/dense/kernel", StoredDType::F32, {4, 2}), tensor("params/dense/bias", StoredDType::F32, {2}),
                     tensor("opt_state/mu/dense/kernel", StoredDType::F32, {4, 2}), tensor("opt_state/mu/dense/bias", StoredDType::F32, {2}),
                     tensor("step", StoredDType::I64, {}), tensor("mask", StoredDType::BOOL, {0})};
    const auto written = write_model(dir, model, 40);
    if (written.size() != 4 || written.back() != kIndexFile) finding("the fixed model did not write three shards and an index");
    ModelFiles where;
    metadata = without_checksums(read_model(dir, &where).metadata);
    shard_of = where.file_of;
    if (const char* out = std::getenv("SHARDLAB_FUZZ_WRITE_INDEX")) fs::copy_file(dir / kIndexFile, out, fs::copy_options::overwrite_existing);
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

bool same(const StoredTensor& a, const StoredTensor& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& fx = fixture();
  {
    std::ofstream out(fx.dir / kIndexFile, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
    if (!out) finding("cannot write the index into " + fx.dir.string());
  }
  ModelFiles where;
  SafetensorsFile got;
  try {
    got = read_model(fx.dir, &where);
  } catch (const Error& e) {
    if (std::string_view(e.what()).rfind(fx.dir.string(), 0) != 0) finding(std::string("error without the checkpoint's path: ") + e.what());
    return 0;
  }
  // Accepted: the index can only have told the truth about the shards.
  if (!where.sharded) finding("an index was read as a single-file model");
  if (got.tensors.size() != fx.model.tensors.size()) finding("accepted, but with " + std::to_string(got.tensors.size()) + " tensors");
  for (const StoredTensor& want : fx.model.tensors) {
    const StoredTensor* t = got.find(want.name);
    if (!t || !same(*t, want)) finding("accepted, but tensor '" + want.name + "' came back changed");
    auto it = where.file_of.find(want.name);
    if (it == where.file_of.end() || it->second != fx.shard_of.at(want.name)) finding("accepted, but '" + want.name + "' from the wrong shard");
  }
  if (without_checksums(got.metadata) != fx.metadata) finding("accepted, but the metadata changed");
  return 0;
}

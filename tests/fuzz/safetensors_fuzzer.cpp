// libFuzzer target for the safetensors reader (engine/checkpoint/safetensors.h). Each input is
// parsed from memory, as read_safetensors does after reading the file. The reader must either
// reject it with a shardlab::Error whose message starts with the name it was given, or accept it;
// an accepted file must then serialise and parse back to the same tensors and metadata, and
// convert to float tensors without anything but a shardlab::Error. Any other exception, a crash,
// a sanitizer report or a leak is a finding. Built only with -DSHARDLAB_FUZZ=ON and clang
// (tests/fuzz/CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/checkpoint/safetensors.h"
#include "engine/util/error.h"

using namespace shardlab;
using namespace shardlab::checkpoint;

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "safetensors_fuzzer: %s\n", what.c_str());
  std::abort();
}

bool same(const StoredTensor& a, const StoredTensor& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  SafetensorsFile f;
  try {
    f = parse_safetensors(bytes, "fuzz-input");
  } catch (const Error& e) {
    if (std::string_view(e.what()).rfind("fuzz-input: ", 0) != 0) finding(std::string("error without the file name: ") + e.what());
    return 0;
  }

  // Accepted: the checkpoint reader's checksum coverage (every tensor its checksum, no checksum of
  // a tensor it lacks) either passes or refuses with the file's name, nothing else.
  std::vector<std::string> names;
  for (const StoredTensor& t : f.tensors) names.push_back(t.name);
  try {
    check_checksum_coverage(f.metadata, names, "fuzz-input");
  } catch (const Error& e) {
    if (std::string_view(e.what()).rfind("fuzz-input: ", 0) != 0) finding(std::string("error without the file name: ") + e.what());
  }

  // Accepted: what was read must write and read back unchanged.
  std::string again;
  try {
    again = to_safetensors_bytes(f);
  } catch (const Error& e) {
    finding(std::string("an accepted file does not serialise: ") + e.what());
  }
  const SafetensorsFile back = parse_safetensors(again, "round-trip");  // throwing here is a finding too
  if (back.tensors.size() != f.tensors.size() || back.metadata != f.metadata) finding("round trip changed the file");
  for (const StoredTensor& t : f.tensors) {
    const StoredTensor* b = back.find(t.name);
    if (!b || !same(*b, t)) finding("round trip changed tensor '" + t.name + "'");
    try {
      const Tensor v = to_tensor(t);
      if (v.data.size() * dtype_size(t.dtype) != t.bytes.size()) finding("to_tensor gave the wrong element count");
    } catch (const Error& e) {
      // Only a BOOL byte other than 0 or 1 is refused after parsing.
      if (t.dtype != StoredDType::BOOL) finding(std::string("to_tensor refused an accepted tensor: ") + e.what());
    }
  }
  return 0;
}

// A main for a fuzz target's entry point without libFuzzer: calls LLVMFuzzerInitialize (where the
// target has one) and then LLVMFuzzerTestOneInput once per file of each directory or file given, in
// name order so a failure repeats. The default (GCC) build links every fuzz target with it and
// replays its committed corpus as a CTest test; a finding aborts inside the target, so the test fails.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(argv[a], ec)) {
      for (const auto& e : fs::directory_iterator(argv[a], ec))
        if (e.is_regular_file()) files.push_back(e.path());
      if (ec) {
        std::fprintf(stderr, "%s: cannot list: %s\n", argv[a], ec.message().c_str());
        return 1;
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        std::fprintf(stderr, "%s: an empty corpus replays nothing\n", argv[a]);
        return 1;
      }
    } else {
      files.push_back(argv[a]);
    }
    for (const fs::path& p : files) {
      std::ifstream in(p, std::ios::binary);
      if (!in) {
        std::fprintf(stderr, "%s: cannot read\n", p.c_str());
        return 1;
      }
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replaying %s (%zu bytes)\n", p.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("%zu inputs replayed without a finding\n", replayed);
  return 0;
}

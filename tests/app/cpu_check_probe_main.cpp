// A stand-in for shardlab and shardlab-cli linked with the same start-up CPU check: main says it
// ran. test_cpu_baseline_check runs it with features pretended missing.
#include <cstdio>

int main() {
  std::puts("probe: main ran");
  return 0;
}

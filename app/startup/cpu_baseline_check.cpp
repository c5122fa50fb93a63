// Refuses to start on a CPU older than the build's target (x86-64-v3) with one clear line and exit
// status 1, instead of dying of SIGILL at the first AVX2 instruction.
//
// Why it is shaped like this:
// - This file is compiled for baseline x86-64 (app/CMakeLists.txt) while the engine is compiled for
//   x86-64-v3, so the check itself cannot fault.
// - It runs from a constructor of priority 101: the linker puts prioritized constructors before the
//   unprioritized ones, so it runs before every static initializer of the program (the engine's
//   included). Shared libraries' constructors run earlier still, but they are Debian's baseline code.
// - It calls only C functions: an inline C++ function used here could be merged by the linker with
//   a copy compiled for x86-64-v3 elsewhere in the program.
// - SHARDLAB_TEST_CPU_LACKS=avx2,fma pretends those features are missing, so tests can see the
//   refusal on a CPU that has them.
#if defined(__x86_64__)

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

namespace {

struct Feature {
  const char* shown;  // as the message names it
  bool present;
};

// True when `name` is one of the comma-separated names in SHARDLAB_TEST_CPU_LACKS.
bool pretend_missing(const char* name) {
  const char* list = getenv("SHARDLAB_TEST_CPU_LACKS");
  if (!list) return false;
  const size_t n = strlen(name);
  for (const char* p = list; *p;) {
    const char* end = strchr(p, ',');
    const size_t len = end ? size_t(end - p) : strlen(p);
    if (len == n && strncasecmp(p, name, n) == 0) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

__attribute__((constructor(101))) void refuse_cpus_older_than_x86_64_v3() {
  __builtin_cpu_init();  // libgcc's own initializer may not have run yet
  // x86-64-v3 as GCC defines -march=x86-64-v3: the v2 features plus AVX, AVX2, BMI1, BMI2, F16C,
  // FMA, LZCNT, MOVBE and XSAVE. __builtin_cpu_supports("avx") also checks that the OS saves the
  // YMM registers.
  const Feature features[] = {
      {"SSE3", __builtin_cpu_supports("sse3") != 0},       {"SSSE3", __builtin_cpu_supports("ssse3") != 0},
      {"SSE4.1", __builtin_cpu_supports("sse4.1") != 0},   {"SSE4.2", __builtin_cpu_supports("sse4.2") != 0},
      {"POPCNT", __builtin_cpu_supports("popcnt") != 0},   {"CMPXCHG16B", __builtin_cpu_supports("cmpxchg16b") != 0},
      {"LAHF", __builtin_cpu_supports("lahf_lm") != 0},    {"AVX", __builtin_cpu_supports("avx") != 0},
      {"AVX2", __builtin_cpu_supports("avx2") != 0},       {"FMA", __builtin_cpu_supports("fma") != 0},
      {"F16C", __builtin_cpu_supports("f16c") != 0},       {"BMI1", __builtin_cpu_supports("bmi") != 0},
      {"BMI2", __builtin_cpu_supports("bmi2") != 0},       {"LZCNT", __builtin_cpu_supports("lzcnt") != 0},
      {"MOVBE", __builtin_cpu_supports("movbe") != 0},     {"XSAVE", __builtin_cpu_supports("xsave") != 0},
  };
  char lacks[256] = "";
  for (const Feature& f : features) {
    if (f.present && !pretend_missing(f.shown)) continue;
    if (lacks[0]) strncat(lacks, ", ", sizeof lacks - strlen(lacks) - 1);
    strncat(lacks, f.shown, sizeof lacks - strlen(lacks) - 1);
  }
  if (!lacks[0]) return;
  char line[512];
  const int len = snprintf(line, sizeof line,
                           "%s: this build needs an x86-64-v3 CPU (AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, "
                           "SSE4.2, ...); this CPU lacks %s\n",
                           program_invocation_short_name, lacks);
  if (len > 0) {
    const ssize_t written = write(STDERR_FILENO, line, size_t(len) < sizeof line ? size_t(len) : sizeof line - 1);
    (void)written;  // nothing better to do if stderr is gone
  }
  _exit(1);  // not exit(): no destructors or atexit handlers of code that never started
}

}  // namespace

#endif

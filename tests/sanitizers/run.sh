#!/usr/bin/env bash
# The sanitizer stage, the README's command for contributors, which CI (.ci/run) runs after the test
# command: two more builds of the engine, shardlab-cli and the engine's tests (no GUI), each in its
# own build directory beside `build`:
#
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer): every engine
#               test and every fuzz corpus replay, except tests labelled asan_slow (a suite too slow
#               under ASan for CI's time; tests/CMakeLists.txt says why for each; the list is printed).
#   build-tsan  ThreadSanitizer, built without OpenMP (libgomp is not TSan-instrumented, so its
#               threads would give only false reports): the tests labelled `threads`, those that run
#               the CPU backend's device workers, collectives, thread budget and background saves.
#
# Tests run two at a time (ctest -j2): most suites keep one core busy, so on a 2-core machine two
# of them take little longer than one. Any sanitizer report fails the test that caused it and so
# this script (exit status non-zero).
# Usage: tests/sanitizers/run.sh [asan|tsan]...   (default: both). Safe to repeat: an existing
# build directory is reused. Extra cmake arguments (a compiler launcher, say) come from
# SHARDLAB_SANITIZE_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$0")/../.."

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(asan tsan)

# Reports name source lines; a UBSan finding stops the test (-fno-sanitize-recover) with a stack.
# verify_asan_link_order=0: the kill test preloads its file-system hook (LD_PRELOAD) ahead of the
# ASan runtime; the hook only forwards calls, so the order is harmless there.
export ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# second_deadlock_stack: both stacks of a lock-order inversion. TSan exits 66 after its first report.
# Qt Test stops a test function after 300 s; under a sanitizer the 8-device training tests need more
# (CTest's limit per suite is raised to 2400 s in tests/CMakeLists.txt for these builds).
export QTEST_FUNCTION_TIMEOUT=1800000
# die_after_fork=0: QProcess forks the test (which has threads) to start shardlab-cli; the child only
# calls exec. The suppressions name races outside Shardlab's code (tsan.supp says why for each).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:die_after_fork=0:suppressions=$PWD/tests/sanitizers/tsan.supp"

# Prints a stage's wall time and, when .ci/run asks (SHARDLAB_STAGE_LOG names a file), reports it there.
stage_took() {  # NAME START
  local secs=$((SECONDS - $2))
  echo "sanitizers: $1 took $secs s"
  if [ -n "${SHARDLAB_STAGE_LOG:-}" ]; then printf '%s\t%d\n' "$1" "$secs" >>"$SHARDLAB_STAGE_LOG"; fi
}

configure_and_build() {  # DIR SANITIZER STAGE [TARGET]
  local dir=$1 sanitizer=$2 stage=$3 target=${4:-all} start=$SECONDS
  # shellcheck disable=SC2086  # the extra arguments are words
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDLAB_GUI=OFF -DSHARDLAB_SANITIZE="$sanitizer" \
    ${SHARDLAB_SANITIZE_CMAKE_ARGS:-} >/dev/null
  cmake --build "$dir" --target "$target"
  stage_took "$stage" "$start"
}

for stage in "${stages[@]}"; do
  case $stage in
    asan)
      configure_and_build build-asan address "ASan build"
      echo "sanitizers: ASan+UBSan: every engine test and corpus replay; left out (label asan_slow):"
      slow=$(ctest --test-dir build-asan -N -L asan_slow | sed -n 's/^ *Test *#[0-9]*: /  /p')
      echo "${slow:-  (none)}"
      start=$SECONDS
      ctest --test-dir build-asan -LE asan_slow -j2 --output-on-failure
      stage_took "ASan tests" "$start"
      ;;
    tsan)
      configure_and_build build-tsan thread "TSan build" thread_tests
      start=$SECONDS
      ctest --test-dir build-tsan -L threads -j2 --output-on-failure
      stage_took "TSan tests" "$start"
      ;;
    *)
      echo "tests/sanitizers/run.sh: unknown stage '$stage' (expected asan or tsan)" >&2
      exit 2
      ;;
  esac
done

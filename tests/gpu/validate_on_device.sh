#!/usr/bin/env bash
# Runs the GPU checks on the device machine, from what tests/gpu/pack_for_device.sh packed
# into .device/. Logs go to $OUT (the device tool brings them back); a short summary is printed last.
#
#   tests/gpu/validate_on_device.sh [tests] [sanitizer] [losses] [profile] [bench]   (default: all five)
#
#   tests      the `gpu` suites: test_backend_conformance and test_cuda_training, and
#              test_nccl_processes (mpirun -np 2 on 2 GPUs, NCCL; skips with fewer or no mpirun)
#   sanitizer  compute-sanitizer memcheck over the conformance suite
#   losses     shardlab-cli train, CPU against CUDA, 10 steps each, on the example projects (seed
#              003's 89-layer Repeat and the ViT among them), on 8 virtual GPU devices under data
#              parallel, Megatron and FSDP, and on pipeline stages (losses within 1e-4; 16-bit 2e-2)
#   profile    shardlab-cli profile on CUDA: deep-mlp-small on one device and on data=8 (the
#              per-device table, MFU against the GPU's measured GEMM peak, the longest kernels);
#              PROFILE_PROJECT (a file under projects/), PROFILE_ARGS ("--dtype bfloat16") and
#              PROFILE_MESHES ("one", "data8" or "one data8", the default) change what is profiled
#   bench      tests/bench/gpu_step.py, with $GPU_STEP_ARGS passed on
#
# Time limits (seconds): TEST_LIMIT (200) for each suite, GPU_STEP_LIMIT (560) for the benchmark,
# SANITIZER_LIMIT (400) for memcheck.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(tests sanitizer losses profile bench)
summary=()
note() { summary+=("$1"); echo "== $1"; }

[ -f .device/programs.tar.xz ] || { echo "no .device/programs.tar.xz: run tests/gpu/pack_for_device.sh here and carry .device"; exit 2; }
# Once per machine: a run of one stage after another reuses what the first unpacked.
if [ ! -f .device/unpacked ] || [ .device/programs.tar.xz -nt .device/unpacked ]; then
  tar -xJf .device/programs.tar.xz
  tar -xJf .device/lib.tar.xz -C .device
  touch .device/unpacked
fi
# The tests were compiled with the packing machine's source and build paths: point those here.
{ read -r src; read -r bld; } < .device/paths
if [ "$src" != "$root" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
bld_rel=${bld#"$src"/}
build=$root/$bld_rel
cublas=$(find /usr/local/cuda*/ /usr/lib /opt -name 'libcublasLt.so.1[0-9]*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH="$root/.device/lib${cublas:+:$(dirname "$cublas")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME=$out/config
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/gpu.txt"
echo "cuBLASLt: ${cublas:-not found}"

for stage in "${stages[@]}"; do
  case $stage in
    tests)
      for t in test_backend_conformance test_cuda_training test_nccl_processes; do
        timeout "${TEST_LIMIT:-200}" "$build/tests/$t" -o "$out/$t.txt,txt" -o -,txt > "$out/$t.console" 2>&1
        rc=$?
        grep -E "^(PASS|FAIL|SKIP|XFAIL|QWARN|QDEBUG)|Totals|Loc:" "$out/$t.txt" | grep -v "^PASS" | head -40
        note "$t: exit $rc, $(grep Totals "$out/$t.txt")"
      done ;;
    sanitizer)
      timeout "${SANITIZER_LIMIT:-400}" compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
        "$build/tests/test_backend_conformance" > "$out/memcheck.txt" 2>&1
      rc=$?
      tail -5 "$out/memcheck.txt"
      note "compute-sanitizer memcheck on test_backend_conformance: exit $rc, $(grep -E 'ERROR SUMMARY' "$out/memcheck.txt" | tail -1)" ;;
    losses)
      python3 tests/gpu/compare_losses.py --cli "$build/app/shardlab-cli" --fashion "$root/.device/fashion-mnist" \
        --out "$out" 2>&1 | tee "$out/losses.txt"
      note "losses CPU vs CUDA: $(tail -1 "$out/losses.txt")" ;;
    profile)
      for which in ${PROFILE_MESHES:-one data8}; do
        mesh=""
        [ "$which" = data8 ] && mesh="--mesh data=8 --preset data_parallel"
        # shellcheck disable=SC2086
        project=${PROFILE_PROJECT:-deep-mlp-small.shardlab.json}
        log=$out/profile-${mesh:+data8-}${project%%.*}.txt
        timeout 120 "$build/app/shardlab-cli" profile "projects/$project" --backend cuda --steps 4 $mesh ${PROFILE_ARGS:-} \
          > "$log" 2>&1
        rc=$?
        head -28 "$log"
        note "profile ${project%%.*} ${PROFILE_ARGS:-} on CUDA ${mesh:-(one device)}: exit $rc"
      done ;;
    bench*)
      args=${GPU_STEP_ARGS:-}
      PYTHONUNBUFFERED=1 timeout "${GPU_STEP_LIMIT:-560}" python3 tests/bench/gpu_step.py --build "$bld_rel" --json "$out/gpu_step.json" $args \
        2>&1 | tee "$out/gpu_step.txt"
      note "gpu_step.py: exit $?" ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
echo; echo "summary:"; printf '  %s\n' "${summary[@]}"

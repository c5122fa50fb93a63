#!/usr/bin/env bash
# Packs what the GPU checks need into .device/ (ignored by git) for the device machine, which has
# the CUDA driver and toolkit but no Debian packages: the programs built here (shardlab-cli, the
# `gpu` suites, the CUDA backend module), the Qt and other shared libraries they link, and the
# Fashion-MNIST files. tests/gpu/validate_on_device.sh runs them there.
#
#   tests/gpu/pack_for_device.sh [build]      then carry .device (the `device` tool's carry list)
#
# Built here rather than there: the build machine's Debian libraries are older than the device
# machine's (glibc 2.36), so the programs run on both, and no device time goes on compiling.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
dest=.device
grep -qx "/$dest/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo "/$dest/" >> .git/info/exclude; }

cmake --build "$build" --target shardlab-cli test_backend_conformance test_cuda_training test_nccl_processes shardlab_backend_cuda
rm -rf "$dest" && mkdir -p "$dest/lib"
programs=("$build/app/shardlab-cli" "$build/tests/test_backend_conformance" "$build/tests/test_cuda_training"
  "$build/tests/test_nccl_processes")
module="$build/lib/shardlab/backends/libshardlab_backend_cuda.so"
# Every shared library the programs need that is not part of glibc or the C++ runtime (which the
# device machine has, newer).
ldd "${programs[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+)\.so' |
  while read -r lib; do cp -L "$lib" "$dest/lib/"; done
tar -cJf "$dest/programs.tar.xz" "${programs[@]}" "$module"
# The tests have the source and build paths compiled in; the device side links them to its copy.
printf '%s\n%s\n' "$PWD" "$(cd "$build" && pwd)" > "$dest/paths"
if [ -d /usr/share/datasets/fashion-mnist ]; then
  cp -r /usr/share/datasets/fashion-mnist "$dest/fashion-mnist"
fi
tar -cJf "$dest/lib.tar.xz" -C "$dest" lib && rm -rf "$dest/lib"
du -sh "$dest"

#!/bin/sh
# The main job, as the README's first command: install what is needed, build
# colloc (release), inspect a bundled model and estimate the GPU memory of
# training it. Until the daemon lands this is the demo; pass arguments to
# inspect another model instead.
#
#   scripts/demo.sh [MODEL [INSPECT-OPTIONS...]]   (default: resnet50 --batch 32)
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
if [ $# -gt 0 ]; then
	exec ./build/colloc inspect "$@"
fi
./build/colloc inspect resnet50 --batch 32 | tail -8
echo
./build/colloc estimate resnet50 --batch 32 --optimizer adam --platform rtx3060-cu124-torch26 \
	--gpu-memory 12GiB --explain
echo
./build/colloc estimate gpt2 --dim seq=512 --max-batch --platform rtx3060-cu124-torch26

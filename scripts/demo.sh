#!/bin/sh
# The main job, as the README's first command: install what is needed, build
# colloc (release), and inspect a bundled model. Until the daemon lands this
# is `colloc inspect` on ResNet-50; pass other arguments to inspect another.
#
#   scripts/demo.sh [MODEL [INSPECT-OPTIONS...]]   (default: resnet50 --batch 32)
set -eu
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
if [ $# -eq 0 ]; then
	set -- resnet50 --batch 32
fi
exec ./build/colloc inspect "$@"

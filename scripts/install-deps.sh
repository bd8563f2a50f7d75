#!/bin/sh
# Install what colloc needs to build, test and run on Debian 12 (bookworm).
#
#   scripts/install-deps.sh           build + test dependencies (with Debian's
#                                     python3-torch: the test of tools/colloc-export.py)
#   scripts/install-deps.sh --tools   also numpy, hyperfine, gnuplot for tools/ (zoo export,
#                                     reference values; not needed to build or test)
#
# Runs apt-get as root, or through sudo when not root. Idempotent.
set -eu

tools=0
for arg in "$@"; do
	case "$arg" in
	--tools) tools=1 ;;
	-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
	*) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
	esac
done

packages="build-essential cmake pkg-config
	slurmctld slurmd slurm-client munge libslurm-dev
	libprotobuf-c-dev protobuf-c-compiler libonnx-dev
	libcjson-dev libcmocka-dev libsqlite3-dev libmicrohttpd-dev libcurl4-openssl-dev curl
	libncurses-dev tmux prometheus
	clang libclang-rt-14-dev clang-format clang-tidy cppcheck
	python3-torch python3-torchvision python3-onnx"
if [ "$tools" = 1 ]; then
	packages="$packages python3 python3-numpy hyperfine gnuplot-nox"
fi

if [ "$(id -u)" = 0 ]; then
	SUDO=""
else
	SUDO="sudo"
fi

missing=""
for p in $packages; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "install-deps.sh: all packages already installed"
	exit 0
fi
echo "install-deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing

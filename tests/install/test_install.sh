#!/bin/sh
# tests/install/test_install.sh BUILD_DIR SOURCE_DIR — `cmake --install` to a
# prefix that is not the configured one, then use the installation: the data
# (zoo, platforms) found beside the binaries' prefix, COLLOC_DATA_DIR over
# it, the build tree still on the checkout's data/, collocd started from the
# install with --opt=value options, a config file, simulated GPUs in its own
# state file, `--gpus auto` refused without NVML, man pages, the systemd unit
# and the bash completion in place.
#
# Installs under DESTDIR=$T/root, so that nothing is written outside $T
# even by rules with absolute destinations.
set -u
build=$1 src=$2
colloc=$build/colloc collocd=$build/collocd
. "$src/tests/lib.sh"
unset COLLOC_DATA_DIR COLLOC_SOCKET COLLOC_SIM_STATE
tmpdir colloc-inst

prefix=/opt/colloc-test
P=$T/root$prefix
if ! DESTDIR="$T/root" bounded 120 cmake --install "$build" --prefix "$prefix" \
	>"$T/install.log" 2>&1; then
	bad "cmake --install failed"
	tail -10 "$T/install.log"
	summary
	exit 1
fi
ok

# --- what is installed where -----------------------------------------------------
for f in bin/colloc bin/collocd bin/colloc-simjob share/colloc/zoo/resnet50.onnx \
	share/man/man1/colloc.1 share/man/man8/collocd.8 share/man/man5/collocd.conf.5 \
	share/bash-completion/completions/colloc share/bash-completion/completions/collocd \
	lib/systemd/system/collocd.service share/colloc/collocd.conf.example; do
	if [ -e "$P/$f" ]; then ok; else bad "not installed: $prefix/$f"; fi
done
ls "$P"/share/colloc/platforms/*.json >/dev/null 2>&1 && ok ||
	bad "no platform profiles in $prefix/share/colloc/platforms"

# --- the data directory --------------------------------------------------------
# The install reads its own share/colloc: the configured prefix (another
# one) has none, and the checkout is not consulted.
expect installed-estimate 0 "peak" "$P/bin/colloc" estimate resnet50 --batch 32
expect installed-platforms 0 "a100" "$P/bin/colloc" estimate --list-platforms
expect installed-hf 0 "peak" "$P/bin/colloc" estimate hf:gpt2 --batch 1 --seq 32
expect installed-data-dir 1 "in $P/share/colloc/zoo" "$P/bin/colloc" estimate no-such-model
mkdir "$T/data"
expect env-data-dir 1 "in $T/data/zoo" env COLLOC_DATA_DIR="$T/data" "$P/bin/colloc" estimate resnet50 --batch 32
# The build tree uses the checkout's data/.
expect build-tree-data-dir 1 "in $src/data/zoo" "$colloc" estimate no-such-model
# A symlink to the installed binary still finds the install's data.
mkdir "$T/links"
ln -s "$P/bin/colloc" "$T/links/colloc"
expect symlinked-data-dir 1 "in $P/share/colloc/zoo" "$T/links/colloc" estimate no-such-model

# --- collocd from the install ---------------------------------------------------
expect collocd-help 0 "--no-config" "$P/bin/collocd" --help
expect collocd-version 0 "^collocd [0-9]" "$P/bin/collocd" --version
expect collocd-bad-option 2 "unknown option '--bogus'" "$P/bin/collocd" --bogus
expect collocd-positional 2 "unexpected argument 'extra'" "$P/bin/collocd" --no-config extra
expect collocd-needs-value 2 "'--gpus'.*needs a value" "$P/bin/collocd" --gpus
printf 'allow_sim = true\npolicy = round-robin\n' >"$T/c.conf"
expect config-equals 0 "^allow_sim = true" "$P/bin/collocd" --config="$T/c.conf" --print-config
expect config-named 0 "^# config file: $T/c.conf" "$P/bin/collocd" --config "$T/c.conf" --print-config
expect config-overridden 0 "^policy = exclusive" "$P/bin/collocd" --config="$T/c.conf" \
	--policy=exclusive --print-config
expect config-none 0 "^# config file: none" "$P/bin/collocd" --no-config --print-config
expect config-missing 2 "$T/absent.conf" "$P/bin/collocd" --config "$T/absent.conf"
expect config-both 2 "choose one" "$P/bin/collocd" --config "$T/c.conf" --no-config

# --gpus auto without NVML: refused with the reason, never simulated GPUs.
if "$P/bin/colloc" gpus --gpus nvml >/dev/null 2>&1; then
	echo "note: NVML works here; the refusal of --gpus auto is not checked"
else
	expect auto-refused 1 "does not serve simulated GPUs unless asked.*allow_sim" \
		"$P/bin/collocd" --no-config --gpus=auto --socket="$T/a.sock" \
		--state-dir="$T/a" --db="$T/a/a.db"
fi

# A short run: --opt=value forms, simulated GPUs without path= in
# STATE_DIR/gpus.sim, the CLI from the install talking to it.
collocd="$P/bin/collocd"
colloc="$P/bin/colloc"
if daemon_start d --no-config --gpus=sim:2x8GiB; then
	ok
	expect run-gpus 0 "SIM-.*colloc simulated GPU" c d gpus
	if [ -f "$T/d/gpus.sim" ]; then ok; else bad "no $T/d/gpus.sim: simulated GPUs not in the state dir"; fi
	check run-log-sim grep -q "simulated GPUs in $T/d/gpus.sim" "$T/d.log"
	id=$(c d submit --mem 256MiB --util 0.4 -- /bin/echo installed | submitted_id)
	expect run-wait 0 "job $id done" c d wait "$id" --timeout 30s
	json=$(c d show --json "$id")
	case $json in
	*'"util_pred":0.4'*) ok ;;
	*) bad "submit --util 0.4 is not the fraction 0.4: $json" ;;
	esac
	stop d
fi
# allow_sim: auto falls back, says so loudly, and in its own state file.
if ! "$P/bin/colloc" gpus --gpus nvml >/dev/null 2>&1 &&
	daemon_start e --config="$T/c.conf" --gpus auto; then
	ok
	check allow-sim-log grep -q "serving SIMULATED GPUs" "$T/e.log"
	if [ -f "$T/e/gpus.sim" ]; then ok; else bad "allow_sim: no $T/e/gpus.sim"; fi
	stop e
fi

# --- the systemd unit and the completion --------------------------------------------
unit=$P/lib/systemd/system/collocd.service
check unit-exec grep -q "^ExecStart=$prefix/bin/collocd " "$unit"
check unit-type grep -q "^Type=simple" "$unit"
check unit-state grep -q "^StateDirectory=colloc" "$unit"
check unit-runtime grep -q "^RuntimeDirectory=colloc" "$unit"
check unit-killmode grep -q "^KillMode=process" "$unit"
if command -v systemd-analyze >/dev/null 2>&1; then
	# Only the unit's syntax: its ExecStart names the final location.
	if systemd-analyze verify "$unit" 2>&1 | grep -Eiq "unknown (key|section)|invalid"; then
		bad "systemd-analyze verify complains about collocd.service"
	else
		ok
	fi
fi
if command -v bash >/dev/null 2>&1; then
	comp=$P/share/bash-completion/completions/colloc
	got=$(bash -c ". '$comp'; COMP_WORDS=('$P/bin/colloc' sub); COMP_CWORD=1; _colloc; echo \${COMPREPLY[*]}")
	is "$got" "submit" "completion of 'colloc sub'"
	got=$(bash -c ". '$comp'; COMP_WORDS=('$P/bin/colloc' submit --ut); COMP_CWORD=2; _colloc; echo \${COMPREPLY[*]}")
	is "$got" "--util" "completion of 'colloc submit --ut'"
	got=$(bash -c ". '$comp'; COMP_WORDS=('$P/bin/collocd' --no-c); COMP_CWORD=1; _collocd; echo \${COMPREPLY[*]}")
	is "$got" "--no-config" "completion of 'collocd --no-c'"
fi

summary

#!/bin/sh
# tools/colloc-export.py end to end: export examples/export/mlp.py with
# --graph-only into a temporary folder, run `colloc estimate` on the file it
# names, and check colloc's trainable-parameter count (inspect --json) and
# the estimate's parameter bytes (estimate --json) against the module's.
# Usage: test_colloc_export.sh PATH/TO/colloc REPO. Exits 77 (skipped) when
# /usr/bin/python3 cannot import torch. Prints "N passed, M failed".
set -u
colloc=$1
repo=$2
py=/usr/bin/python3
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() {
	echo "FAIL $*"
	fail=$((fail + 1))
}
is() {
	if [ "$1" = "$2" ]; then ok; else bad "$3 (got '$1', expected '$2')"; fi
}

if ! [ -x "$py" ] || ! "$py" -c 'import torch, onnx' 2>/dev/null; then
	echo "SKIP: $py cannot import torch and onnx (Debian: apt-get install python3-torch python3-onnx)"
	exit 77
fi

# The export prints the next command on stdout, its report on stderr.
if ! "$py" "$repo/tools/colloc-export.py" "$repo/examples/export/mlp.py:model" \
	--input 784 --graph-only --out "$tmp/mlp.onnx" >"$tmp/out" 2>"$tmp/err"; then
	cat "$tmp/err"
	bad "colloc-export.py exited non-zero"
	echo "$pass passed, $fail failed"
	exit 1
fi
ok
is "$(cat "$tmp/out")" "colloc estimate $tmp/mlp.onnx --batch 2" "printed command"
grep -q "training mode" "$tmp/err" && ok || bad "not exported in training mode: $(cat "$tmp/err")"

want=$("$py" -c "
import sys
sys.path.insert(0, '$repo/examples/export')
import mlp
print(sum(p.numel() for p in mlp.model().parameters() if p.requires_grad))")
# Run the printed command (with this build's colloc) and ask for JSON.
set -- $(cat "$tmp/out")
shift
if "$colloc" "$@" --json >"$tmp/est.json" 2>"$tmp/est.err"; then ok; else
	bad "colloc estimate failed: $(cat "$tmp/est.err")"
fi
params_bytes=$("$py" -c "import json; print(json.load(open('$tmp/est.json'))['breakdown']['params_bytes'])" 2>/dev/null)
# The allocator rounds each parameter up to 512 bytes: at least 4 bytes each.
if [ -n "$params_bytes" ] && [ "$params_bytes" -ge $((want * 4)) ] &&
	[ "$params_bytes" -le $((want * 4 + 7 * 512)) ]; then ok; else
	bad "estimate params_bytes $params_bytes for $want fp32 parameters"
fi
"$colloc" inspect "$tmp/mlp.onnx" --batch 2 --json >"$tmp/inspect.json" 2>"$tmp/inspect.err" ||
	bad "colloc inspect failed: $(cat "$tmp/inspect.err")"
got=$("$py" -c "import json; print(json.load(open('$tmp/inspect.json'))['params']['trainable'])" 2>/dev/null)
is "$got" "$want" "trainable parameters (colloc inspect --json vs the module)"

# A model that loses parameters in the export is refused with status 1.
cat >"$tmp/unused.py" <<'PY'
import torch.nn as nn


class Half(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(8, 4)
        self.unused = nn.Linear(8, 4)

    def forward(self, x):
        return self.used(x)


def model():
    return Half()
PY
"$py" "$repo/tools/colloc-export.py" "$tmp/unused.py:model" --input 8 --out "$tmp/u.onnx" \
	>/dev/null 2>"$tmp/u.err"
is "$?" 1 "export of a model with unused parameters"
grep -q "unused.weight" "$tmp/u.err" && ok || bad "message does not name the missing parameter: $(cat "$tmp/u.err")"
[ -e "$tmp/u.onnx" ] && bad "a file was written for the refused export" || ok

# Usage errors exit 2.
"$py" "$repo/tools/colloc-export.py" "$repo/examples/export/mlp.py:model" --input 7,y \
	>/dev/null 2>&1
is "$?" 2 "bad --input"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

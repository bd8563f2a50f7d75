#!/bin/sh
# End-to-end checks of the `colloc` command line: exit statuses, error
# messages, --json output, --help. Usage: test_cli.sh PATH/TO/colloc
# (COLLOC_DATA_DIR must point at the repository's data/). Prints
# "N passed, M failed" and exits non-zero on any failure.
set -u
colloc=$1
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect NAME STATUS PATTERN CMD...: run CMD, check its exit status and that
# stdout+stderr match the extended regex PATTERN.
expect() {
	name=$1 want=$2 pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL $name: exit $got, expected $want"; sed 's/^/  | /' "$tmp/out" | head -5
		fail=$((fail + 1))
	elif ! grep -Eq -- "$pat" "$tmp/out"; then
		echo "FAIL $name: output does not match /$pat/"; sed 's/^/  | /' "$tmp/out" | head -5
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

expect help 0 "commands:" "$colloc" --help
expect no-command 2 "usage:" "$colloc"
expect bad-command 2 "colloc: error: unknown command 'frobnicate'" "$colloc" frobnicate
expect inspect-help 0 "--dim NAME=VALUE" "$colloc" inspect --help
expect inspect-list 0 "^resnet50$" "$colloc" inspect --list
expect inspect-list-hf 0 "^hf:llama-2-7b$" "$colloc" inspect --list
# hf:NAME is the bundled data/hf/NAME from any directory; a file or
# directory of that name where colloc runs comes first.
expect hf-bundled 0 "^parameters +124439808 trainable" sh -c "cd '$tmp' && '$colloc' estimate hf:gpt2 --batch 1 --seq 32"
expect hf-bundled-missing 1 "hf:gpt3: no file or directory 'gpt3' here and no bundled configuration .*/hf/gpt3" sh -c "cd '$tmp' && '$colloc' estimate hf:gpt3 --batch 1"
mkdir -p "$tmp/gpt2"
sed 's/"n_layer": *12/"n_layer": 1/' "${COLLOC_DATA_DIR:?}/hf/gpt2/config.json" >"$tmp/gpt2/config.json"
expect hf-local-first 0 "^parameters +46473216 trainable" sh -c "cd '$tmp' && '$colloc' estimate hf:gpt2 --batch 1 --seq 32"
rm -rf "$tmp/gpt2"
expect inspect-table 0 "trainable params 25557032" "$colloc" inspect resnet50 --batch 2
expect inspect-json 0 '"flops_forward":[0-9]+' "$colloc" inspect resnet18 --batch 4 --json
expect inspect-json-shape 0 '"outputs":\[\{"name":"logits","shape":\[4,1000\]' "$colloc" inspect resnet18 --batch 4 --json
expect inspect-missing 1 "colloc: error: no file 'nosuchmodel'" "$colloc" inspect nosuchmodel
expect inspect-no-model 2 "MODEL is missing" "$colloc" inspect
expect inspect-bad-batch 2 "--batch wants a positive integer" "$colloc" inspect resnet18 --batch 0
expect inspect-bad-dim 2 "--dim wants NAME=VALUE" "$colloc" inspect gpt2 --dim seq
expect inspect-unbound 2 "dim 1 \('seq'\) is unbound; bind it with --dim seq=N" "$colloc" inspect gpt2 --batch 1
expect inspect-unknown-dim 2 "no dimension named 'sqe'" "$colloc" inspect gpt2 --dim sqe=5
expect inspect-unknown-opt 2 "unknown or incomplete option" "$colloc" inspect resnet18 --frob
printf 'not an onnx file' >"$tmp/bad.onnx"
expect inspect-garbage 1 "colloc: error: .*bad.onnx: not an ONNX model" "$colloc" inspect "$tmp/bad.onnx"
mkdir "$tmp/dir.onnx"
expect inspect-dir 1 "colloc: error: .*not a regular file" "$colloc" inspect "$tmp/dir.onnx"
expect estimate-help 0 "--max-batch" "$colloc" estimate --help
expect estimate-needs-batch 2 "--batch N is required" "$colloc" estimate resnet18
expect estimate-json 0 '"peak_device_bytes":[0-9]+.*"breakdown":\{"params_bytes"' "$colloc" estimate resnet18 --batch 8 --json
expect estimate-json-phase 0 '"peak_phase":"(forward|loss|backward|optimizer)"' "$colloc" estimate gpt2 --batch 2 --dim seq=64 --json
expect estimate-explain 0 "largest tensors alive at the peak" "$colloc" estimate bert_base --batch 2 --dim seq=32 --explain
expect estimate-eval-mode 0 "peak device" "$colloc" estimate convnext_tiny --batch 4 --optimizer sgd
expect estimate-fits 0 "fits in 1.00 GiB \\(point estimate\\): NO" "$colloc" estimate resnet50 --batch 64 --gpu-memory 1GiB
expect estimate-max-batch 0 "largest batch that fits in 12.0 GiB: [0-9]+" "$colloc" estimate resnet50 --max-batch --gpu-memory 12GiB
expect estimate-max-batch-platform 0 "largest batch that fits" "$colloc" estimate mobilenet_v2 --max-batch --platform rtx4060-cu124-torch26
expect estimate-platforms 0 "rtx3060-cu124-torch26" "$colloc" estimate --list-platforms
expect estimate-bad-platform 2 "platform 'nope'" "$colloc" estimate resnet18 --batch 1 --platform nope
expect estimate-bad-opt 2 "--optimizer: 'lion'" "$colloc" estimate resnet18 --batch 1 --optimizer lion
expect estimate-amp 0 '"precision":"amp-fp16"' "$colloc" estimate resnet18 --batch 1 --precision amp-fp16 --json
expect estimate-bad-precision 2 "--precision: 'fp8'" "$colloc" estimate resnet18 --batch 1 --precision fp8
expect estimate-causal-lm 0 '"loss":"causal-lm"' "$colloc" estimate gpt2 --batch 1 --dim seq=32 --loss causal-lm --json
expect estimate-causal-lm-loop 0 '"loss":"causal-lm-loop"' "$colloc" estimate gpt2 --batch 1 --dim seq=32 --loss causal-lm-loop --json
# what the loss saves: log_softmax over [1, 32, 50257] float32 logits (causal-lm shifts the
# labels) or over the shifted copy's 31 rows (causal-lm-copy), plus nll_loss's total_weight
expect estimate-loss-saved 0 '"loss_saved_bytes":6432900' "$colloc" estimate gpt2 --batch 1 --dim seq=32 --loss causal-lm --json
expect estimate-loss-saved-copy 0 '"loss_saved_bytes":6231872' "$colloc" estimate gpt2 --batch 1 --dim seq=32 --loss causal-lm-copy --json
# Under bf16 autocast log_softmax converts the half logits with a float32 copy of its own,
# and the loss is the peak; under fp16 CUDA's log_softmax reads half and writes float32 in one
# kernel (ATen's half_to_float), so the peak moves to the backward
expect estimate-amp-bf16-loss-copy 0 '"peak_phase":"loss"' "$colloc" estimate gpt2 --batch 4 --dim seq=512 --precision amp-bf16 --json
expect estimate-amp-fp16-no-loss-copy 0 '"peak_phase":"backward"' "$colloc" estimate gpt2 --batch 4 --dim seq=512 --precision amp-fp16 --json
# mse_loss saves the model's output, [8, 1000] float32 (PyTorch 1.13 on the CPU, saved-tensor
# hooks over resnet18's forward and the loss: 32000 bytes more); its target is data
expect estimate-loss-saved-mse 0 '"loss_saved_bytes":32000,' "$colloc" estimate resnet18 --batch 8 --loss mse --json
expect estimate-loss-saved-none 0 '"loss_saved_bytes":0,' "$colloc" estimate resnet18 --batch 8 --loss none --json
expect estimate-bad-loss 2 "not one of cross-entropy, causal-lm, causal-lm-loop, causal-lm-copy, mse, none" "$colloc" estimate gpt2 --batch 1 --loss shifted
expect estimate-keep-grads 0 '"keep_grads":true,"grad_accum":1,"peak_phase":"backward"' "$colloc" estimate resnet18 --batch 16 --keep-grads --json
expect estimate-grad-accum 0 "accumulated over 4 micro-batches" "$colloc" estimate resnet18 --batch 16 --grad-accum 4
expect estimate-grad-accum-bad 2 "--grad-accum wants 1..65536 micro-batches, not '0'" "$colloc" estimate resnet18 --batch 16 --grad-accum 0
expect estimate-context 0 '"context_bytes":1048576' "$colloc" estimate resnet18 --batch 1 --context-bytes 1MiB --json

printf 'id,submit_s,duration_s,gpus,model\n1,0,100,1,dqn\n2,0,100,1,dqn\n' >"$tmp/t.csv"
expect sim-table 0 "ratios against exclusive" "$colloc" sim --trace "csv:$tmp/t.csv" --cluster 1x1x40GiB
expect sim-json 0 '"policy":"estimate-aware".*"jobs_lost":0' "$colloc" sim --trace "csv:$tmp/t.csv" --cluster 1x1x40GiB --json
expect sim-bad-cluster 2 "NODESxGPUSxTYPE" "$colloc" sim --trace "csv:$tmp/t.csv" --cluster big
expect sim-bad-policy 2 "--policy: 'fifo'" "$colloc" sim --trace "csv:$tmp/t.csv" --cluster 1x1x40GiB --policy fifo
expect sim-missing 2 "--trace KIND:PATH and --cluster SPEC are required" "$colloc" sim --cluster 1x1x40GiB
expect sim-csv 0 "^estimate-aware,2,2,0," "$colloc" sim --trace "csv:$tmp/t.csv" --cluster 1x1x40GiB --csv
expect sim-plot 0 "ratios against exclusive" "$colloc" sim --trace "csv:$tmp/t.csv" --cluster 1x1x40GiB --plot "$tmp/plots"
expect sim-plot-files 0 "jct_estimate-aware.dat" ls "$tmp/plots"
expect sim-plot-script 0 "set output 'util.svg'" cat "$tmp/plots/plots.gp"
expect sim-bad-trace 1 "colloc: error:" "$colloc" sim --trace "csv:$tmp/nope.csv" --cluster 1x1x40GiB

expect gpus-create 0 "SIM-[0-9a-f-]+ +colloc simulated GPU" "$colloc" gpus --gpus "sim:2x8GiB,path=$tmp/g.state"
expect gpus-attach-json 0 '"backend":"sim","gpus":\[\{"index":0,"uuid":"SIM-.*"mem_total_bytes":8589934592' "$colloc" gpus --gpus "sim:path=$tmp/g.state" --json
expect gpus-bad-backend 1 "unknown GPU backend 'foo'" "$colloc" gpus --gpus foo:1
expect gpus-help 0 "--gpus SPEC" "$colloc" gpus --help

expect safety-bound 0 "fits in 8.00 GiB \\(upper bound\\): yes" "$colloc" estimate resnet50 --batch 16 --gpu-memory 8GiB --safety bound
expect safety-json 0 '"peak_device_upper_bytes":[0-9]+,"upper_bound_parts":\{"conv_workspace_bytes":[0-9]+' "$colloc" estimate resnet50 --batch 16 --json
expect safety-max-batch 0 '"safety":"bound"' "$colloc" estimate resnet50 --max-batch --gpu-memory 16GiB --safety bound --json
expect safety-bad 2 "--safety: 'x' is not one of point, bound" "$colloc" estimate resnet50 --batch 2 --safety x

# --calibrate: full-process runs measured 300 MiB above the estimated
# reserved peak plus the profile's CUDA context (287,047,680 bytes) fit a
# context_bytes of exactly 300 MiB, written as a profile that loads; read as
# baseline-subtracted peaks, the CUDA context is not taken off.
r1=$("$colloc" estimate resnet18 --batch 4 --platform rtx3060-cu124-torch26 --json | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
r2=$("$colloc" estimate resnet18 --batch 8 --optimizer sgd --platform rtx3060-cu124-torch26 --json | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
printf '# measured\nmodel,batch,optimizer,peak_bytes\nresnet18,4,,%s\nresnet18,8,sgd,%s\n' \
	$((r1 + 314572800 + 287047680)) $((r2 + 314572800 + 287047680)) >"$tmp/runs.csv"
expect calibrate 0 "context_bytes 300.0 MiB" "$colloc" estimate --calibrate "$tmp/runs.csv" --platform rtx3060-cu124-torch26 --out "$tmp/cal.json"
expect calibrate-profile 0 "reserved \\+ 574 MiB CUDA context" "$colloc" estimate resnet18 --batch 4 --platform "$tmp/cal.json"
expect calibrate-subtracted 0 "context_bytes 573.8 MiB" "$colloc" estimate --calibrate "$tmp/runs.csv" --platform rtx3060-cu124-torch26 --context-subtracted
expect calibrate-out-alone 2 "are for --calibrate" "$colloc" estimate resnet18 --batch 2 --context-subtracted
expect calibrate-no-base 2 "--calibrate needs --platform BASE" "$colloc" estimate --calibrate "$tmp/runs.csv"
# tools/measure_gpu.py's own CSV: nvml_peak_bytes is the peak, seq binds
# every sequence dim, a run with an error is skipped, and the profile's
# cuDNN context counts only for the graph that convolves (an exact 300 MiB
# fit needs all three).
p=h200-141gb-cu130-torch211
r3=$("$colloc" estimate resnet18 --batch 4 --platform $p --json | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
r4=$("$colloc" estimate gpt2 --batch 2 --seq 64 --platform $p --json | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
printf 'model,batch,seq,optimizer,precision,iterations,max_allocated_bytes,max_reserved_bytes,nvml_peak_bytes,step_s,gpu,error\nresnet18,4,,adam,fp32,4,1,1,%s,0.1,NVIDIA H200,\ngpt2,2,64,adam,fp32,4,1,1,%s,0.1,NVIDIA H200,\nvgg16,512,,adam,fp32,4,0,0,,,NVIDIA H200,OutOfMemoryError\n' \
	$((r3 + 18874368 + 314572800 + 639631360)) $((r4 + 314572800 + 639631360)) >"$tmp/gpu.csv"
expect calibrate-measure-gpu 0 "context_bytes 300.0 MiB" "$colloc" estimate --calibrate "$tmp/gpu.csv" --platform $p
expect calibrate-skips-failed 0 "gpu.csv:4: skipped, the run failed: OutOfMemoryError" "$colloc" estimate --calibrate "$tmp/gpu.csv" --platform $p
# an hf: run with SDPA attention (the attention column) and no loss column:
# estimated with SDPA and the model's own loss (causal-lm), as estimate
# does, an exact fit; eager would have fit something else
hf="hf:$COLLOC_DATA_DIR/hf/gpt2"
r5=$("$colloc" estimate "$hf" --batch 2 --seq 64 --attention sdpa --platform $p --json | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
r6=$("$colloc" estimate "$hf" --batch 2 --seq 64 --platform $p --json | sed 's/.*"peak_reserved_bytes":\([0-9]*\).*/\1/')
printf 'model,batch,seq,attention,nvml_peak_bytes\n%s,2,64,sdpa,%s\n' \
	"$hf" $((r5 + 314572800 + 639631360)) >"$tmp/sdpa.csv"
expect calibrate-attention 0 "context_bytes 300.0 MiB" "$colloc" estimate --calibrate "$tmp/sdpa.csv" --platform $p
if [ "$r5" -lt "$r6" ]; then pass=$((pass + 1)); else
	echo "FAIL calibrate-attention-differs: sdpa $r5 not below eager $r6"; fail=$((fail + 1))
fi
printf 'model,batch,seq,attention,nvml_peak_bytes\n%s,2,64,fused,1GiB\n' "$hf" >"$tmp/sdpa.csv"
expect calibrate-bad-attention 2 "attention 'fused' is not one of eager, sdpa, flash" "$colloc" estimate --calibrate "$tmp/sdpa.csv" --platform $p
printf 'model,batch\nresnet18,2\n' >"$tmp/bad.csv"
expect calibrate-bad-header 1 "must name the columns model, batch and peak_bytes" "$colloc" estimate --calibrate "$tmp/bad.csv" --platform rtx3060-cu124-torch26
printf 'model,batch,peak_bytes\nresnet18,2,lots\n' >"$tmp/bad.csv"
expect calibrate-bad-peak 1 "bad.csv:2: peak_bytes 'lots' is not a positive size" "$colloc" estimate --calibrate "$tmp/bad.csv" --platform rtx3060-cu124-torch26
expect calibrate-missing 1 "cannot open" "$colloc" estimate --calibrate "$tmp/nope.csv" --platform rtx3060-cu124-torch26

# Every long option a command's getopt table accepts is in its --help (the
# shared training options of src/cli/cli.h too, where the command takes them).
src=$(cd "$(dirname "$0")/../.." && pwd)
for f in "$src"/src/cli/cmd_*.c; do
	cmd=$(basename "$f" .c | sed 's/^cmd_//; s/^slurm$/slurm-gres/; s/_/-/g')
	names=$({
		sed -n 's/.*{"\([a-z0-9-]*\)", *\(required\|no\|optional\)_argument.*/\1/p' "$f"
		if grep -q CLI_TRAIN_OPTIONS "$f"; then
			sed -n 's/.*{"\([a-z0-9-]*\)", *\(required\|no\)_argument.*/\1/p' "$src/src/cli/cli.h"
			echo parallel
		fi
	} | sort -u)
	[ -n "$names" ] || continue
	"$colloc" "$cmd" --help >"$tmp/help" 2>&1
	for n in $names; do
		if grep -q -- "--$n" "$tmp/help"; then
			pass=$((pass + 1))
		else
			echo "FAIL help-lists-options: colloc $cmd --help does not mention --$n"
			fail=$((fail + 1))
		fi
	done
done

expect ops-list 0 "^Conv +convolution +saves its input" "$colloc" ops
expect ops-one 0 "^Mul +elementwise" "$colloc" ops Mul
expect ops-unknown 1 "does not support op 'LSTMX'" "$colloc" ops LSTMX
expect ops-patterns 0 "F.hardswish \\(opset < 14\\)" "$colloc" ops
expect ops-help 0 "--markdown" "$colloc" ops --help
# docs/ops.md is generated from the op table: it must match it.
"$colloc" ops --markdown >"$tmp/ops.md" 2>&1
if diff -u "$(dirname "$0")/../../docs/ops.md" "$tmp/ops.md" >"$tmp/ops.diff"; then
	pass=$((pass + 1))
else
	echo "FAIL ops-doc-current: docs/ops.md is stale; regenerate: colloc ops --markdown >docs/ops.md"
	head -10 "$tmp/ops.diff" | sed 's/^/  | /'
	fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

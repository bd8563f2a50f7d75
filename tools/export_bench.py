"""Export the graphs of the GPU memory benchmark (tools/bench_estimate.c) into data/bench/.

The measured runs in data/measurements/xmem_dev.csv (copied from the shared measurement set; see
data/measurements/README.md) trained torchvision CNNs on CIFAR-10 images resized to 86x86, and
Hugging Face distilgpt2/gpt2 on sequences of up to 128 tokens. This writes one graph-only ONNX
file per CNN at that input size, exported exactly as the zoo is (tools/export_zoo.py: opset 14,
parameter names kept, training mode where torch.onnx can, weights stripped). The transformers
use the zoo's graphs (their sequence length is a symbolic dimension).

One substitution, for VGG16 only: at 86x86 its feature map is 2x2, and torch.onnx cannot export
AdaptiveAvgPool2d((7, 7)) from 2x2 (the output size is not a factor of the input size). The
export replaces it with nn.Upsample(size=(7, 7)), which produces the same [B, 512, 7, 7]
output; the only memory difference is the 2x2 input adaptive pooling would save for backward
(8 KiB per image at batch 1, under 0.01% of VGG16's peak).

    /usr/bin/python3 tools/export_bench.py [--out data/bench]
"""

import argparse
import os
import sys

import onnx
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402

SIZE = 86
BENCH = [
    ("vgg16_86", "vgg16", {}),
    ("resnet101_86", "resnet101", {}),
    ("mobilenet_v2_86", "mobilenet_v2", {}),
    ("convnext_tiny_86", "convnext_tiny", {}),
    ("regnet_x_400mf_86", "regnet_x_400mf", {}),
    ("mnasnet1_0_c10_86", "mnasnet1_0", {"num_classes": 10}),
]


def export(name, ctor, kwargs, out_dir):
    spec = export_zoo._cnn(name, ctor, kwargs, size=SIZE)
    model = spec.build()
    if ctor == "vgg16":
        model.avgpool = nn.Upsample(size=(7, 7))
    mode = "training"
    try:
        data = export_zoo._export_bytes(spec, model, mode, 1)
    except Exception:  # noqa: BLE001 - torch.onnx raises many kinds
        mode = "eval"
        data = export_zoo._export_bytes(spec, model, mode, 1)
    proto = onnx.load_from_string(data)
    export_zoo.make_graph_only(proto, f"{name}.weights")
    path = os.path.join(out_dir, f"{name}.onnx")
    onnx.save(proto, path)
    print(f"{name:22s} {mode:8s} {os.path.getsize(path) / 1024:8.1f} KiB")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data",
                                                  "bench"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, ctor, kwargs in BENCH:
        export(name, ctor, kwargs, args.out)


if __name__ == "__main__":
    main()

"""Export every torchvision classification model (graph only) and run `colloc inspect` on it.

Checks the claim that any graph-only ONNX export of a torchvision classifier works, not only the
zoo's: for each constructor in torchvision.models, export in training mode (eval mode where
torch.onnx cannot), strip the weights as tools/export_zoo.py does, and compare colloc's
trainable-parameter count and output shape with PyTorch's.

    /usr/bin/python3 tools/check_torchvision.py [--colloc build/colloc] [--only a,b]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_zoo  # noqa: E402

# torchvision 0.14 classification constructors (models.list_models() arrived in 0.15).
NAMES = """alexnet convnext_tiny convnext_small convnext_base convnext_large densenet121 densenet161
densenet169 densenet201 efficientnet_b0 efficientnet_b1 efficientnet_b2 efficientnet_b3
efficientnet_b4 efficientnet_b5 efficientnet_b6 efficientnet_b7 efficientnet_v2_s efficientnet_v2_m
efficientnet_v2_l googlenet inception_v3 maxvit_t mnasnet0_5 mnasnet0_75 mnasnet1_0 mnasnet1_3
mobilenet_v2 mobilenet_v3_large mobilenet_v3_small regnet_x_400mf regnet_x_800mf regnet_x_1_6gf
regnet_x_3_2gf regnet_x_8gf regnet_x_16gf regnet_x_32gf regnet_y_400mf regnet_y_800mf
regnet_y_1_6gf regnet_y_3_2gf regnet_y_8gf regnet_y_16gf regnet_y_32gf resnet18 resnet34
resnet50 resnet101 resnet152 resnext50_32x4d resnext101_32x8d resnext101_64x4d shufflenet_v2_x0_5
shufflenet_v2_x1_0 shufflenet_v2_x1_5 shufflenet_v2_x2_0 squeezenet1_0 squeezenet1_1 swin_t swin_s
swin_b swin_v2_t swin_v2_s swin_v2_b vgg11 vgg11_bn vgg13 vgg13_bn vgg16 vgg16_bn vgg19 vgg19_bn
vit_b_16 vit_b_32 vit_l_16 vit_l_32 vit_h_14 wide_resnet50_2 wide_resnet101_2""".split()
SIZES = {"inception_v3": 299, "vit_h_14": 518}


def check(name, colloc, tmp):
    if not hasattr(torchvision.models, name):
        return "skip", "not in this torchvision"
    kwargs = {"aux_logits": False} if name in ("googlenet", "inception_v3") else {}
    if name == "googlenet":
        kwargs["init_weights"] = True
    spec = export_zoo._cnn(name, name, kwargs, size=SIZES.get(name, 224))
    model = spec.build()
    params = sum(p.numel() for p in model.parameters())
    mode = "training"
    try:
        data = export_zoo._export_bytes(spec, model, mode, 1)
    except Exception:  # noqa: BLE001
        mode = "eval"
        try:
            data = export_zoo._export_bytes(spec, model, mode, 1)
        except Exception as e:  # noqa: BLE001
            return "export-fails", str(e).splitlines()[0][:100]
    proto = onnx.load_from_string(data)
    export_zoo.make_graph_only(proto, f"{name}.weights")
    path = os.path.join(tmp, f"{name}.onnx")
    onnx.save(proto, path)
    r = subprocess.run([colloc, "inspect", path, "--batch", "2", "--json"], capture_output=True,
                       text=True)
    if r.returncode:
        return "FAIL", r.stderr.strip()[:300]
    d = json.loads(r.stdout)
    with torch.no_grad():
        model.eval()
        out = model(torch.zeros(2, 3, SIZES.get(name, 224), SIZES.get(name, 224)))
    ok = d["params"]["trainable"] == params and d["outputs"][0]["shape"] == list(out.shape)
    return ("ok" if ok else "FAIL"), (f"{mode}, params {d['params']['trainable']} vs {params}, "
                                      f"out {d['outputs'][0]['shape']} vs {list(out.shape)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--colloc", default="build/colloc")
    ap.add_argument("--only")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else NAMES
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            status, detail = check(name, args.colloc, tmp)
            bad += status == "FAIL"
            print(f"{name:22s} {status:12s} {detail}", flush=True)
    print(f"{len(names) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

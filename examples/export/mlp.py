"""A tiny model to try tools/colloc-export.py on:

    /usr/bin/python3 tools/colloc-export.py examples/export/mlp.py:model --input 784 --graph-only
"""
import torch.nn as nn


def model():
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(256, 10),
    )

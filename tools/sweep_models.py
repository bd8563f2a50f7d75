"""Models of the CPU reference sweep (tools/reference_sweep.py) that torchvision does not have.

Our own plain torch.nn definitions, written for the sweep (no weights, random initialisation):

  lstm_lm   Embedding(10000, 256) -> 2-layer nn.LSTM(256, 512, batch_first) -> Linear(512, 10000)
  gru_lm    the same with nn.GRU
  unet      a small UNet: 3 levels of (Conv3x3-BN-ReLU) x 2 with MaxPool2d down (32-64-128 channels,
            256 at the bottom), ConvTranspose2d(2, stride 2) up, skip connections by
            torch.cat, 1x1 Conv to 1 output channel
  dcgan_g   the DCGAN generator (Radford et al. 2016; PyTorch's dcgan example): z [100, 1, 1] ->
            ConvTranspose2d + BatchNorm + ReLU x 4 (512-256-128-64) -> ConvTranspose2d to 3 x 64 x 64
            -> Tanh
  dcgan_d   the DCGAN discriminator: 3 x 64 x 64 -> Conv2d(4, stride 2) + LeakyReLU(0.2), then
            Conv2d + BatchNorm + LeakyReLU x 3 (128-256-512) -> Conv2d(512, 1, 4) -> Sigmoid
"""

import torch
import torch.nn as nn

VOCAB = 10000
Z_DIM = 100


class RNNLM(nn.Module):
    """Word-level language model: embedding, a 2-layer LSTM or GRU, projection to the vocabulary.
    forward(input_ids [batch, seq] int64) -> logits [batch, seq, vocab]."""

    def __init__(self, cell="lstm", vocab=VOCAB, emb=256, hidden=512, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(emb, hidden, num_layers=layers, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, input_ids):
        out, _ = self.rnn(self.embedding(input_ids))
        return self.decoder(out)


def lstm_lm():
    return RNNLM("lstm")


def gru_lm():
    return RNNLM("gru")


def _double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    """forward(image [batch, 3, H, W], H and W multiples of 8) -> [batch, 1, H, W]."""

    def __init__(self, cin=3, cout=1, widths=(32, 64, 128, 256)):
        super().__init__()
        self.down = nn.ModuleList()
        c = cin
        for w in widths[:-1]:
            self.down.append(_double_conv(c, w))
            c = w
        self.pool = nn.MaxPool2d(2)
        self.bottom = _double_conv(c, widths[-1])
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        c = widths[-1]
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(c, w, 2, stride=2))
            self.dec.append(_double_conv(2 * w, w))
            c = w
        self.head = nn.Conv2d(c, cout, 1)

    def forward(self, x):
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
            x = self.pool(x)
        x = self.bottom(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def unet():
    return UNet()


class DCGANGenerator(nn.Module):
    """forward(z [batch, 100, 1, 1]) -> image [batch, 3, 64, 64] in [-1, 1]."""

    def __init__(self, nz=Z_DIM, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class DCGANDiscriminator(nn.Module):
    """forward(image [batch, 3, 64, 64]) -> probability [batch, 1, 1, 1]."""

    def __init__(self, ndf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x)


def dcgan_g():
    return DCGANGenerator()


def dcgan_d():
    return DCGANDiscriminator()


MODELS = {
    "lstm_lm": (lstm_lm, "rnn"),
    "gru_lm": (gru_lm, "rnn"),
    "unet": (unet, "unet"),
    "dcgan_g": (dcgan_g, "gan"),
    "dcgan_d": (dcgan_d, "gan"),
}

#!/usr/bin/env python3
"""Trains small convolution/pooling models with effc + effrun and with
PyTorch 1.13 (torch.optim.SGD) from the same initial weights and data, and
compares the per-step losses and the final parameters.

    conv_pool_vs_torch.py --work DIR [--bin BUILD/bin] [--only NAME]

The cases cover conv2d (stride, padding, dilation, groups, depthwise, bias
or not, rows no window reaches), max pooling (2x2; 3x3 stride 2 with
padding; ceil_mode; ties after a ReLU) and average pooling (with and without
count_include_pad, ceil_mode), forward and every gradient. effc and effrun
are taken from --bin, else from PATH. `--runner shim:PATH` drives the .effx
with a Python script taking `EFFX NPZ STEPS OUT.npz` instead of effrun.

Prints one line per case and `N passed, M failed`; exits 1 on any mismatch
(rtol 1e-3, atol 1e-5 by default).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_torch import read_safetensors, tool  # noqa: E402
from train_vs_torch import export as export_graph  # noqa: E402


class Net(nn.Module):
    """features -> flatten -> linear -> cross entropy; returns the loss."""

    def __init__(self, features, in_shape, classes=5):
        super().__init__()
        self.features = nn.Sequential(*features)
        with torch.no_grad():
            n = self.features(torch.zeros(1, *in_shape)).numel()
        self.fc = nn.Linear(n, classes)

    def forward(self, x, y):
        h = self.features(x).flatten(1)
        return F.cross_entropy(self.fc(h), y)


# name -> (input shape [C, H, W], layers)
CASES = {
    # stride 2, padding 1, bias; ReLU then 2x2 max pooling: many tied zeros.
    "conv_s2_relu_maxpool2": ((3, 12, 12), lambda: [
        nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
        nn.MaxPool2d(2)]),
    # dilation 2, groups 2, no bias; 3x3 stride 2 max pooling with padding.
    "conv_d2_g2_nobias_maxpool3s2p1": ((4, 13, 13), lambda: [
        nn.Conv2d(4, 6, 3, padding=2, dilation=2, groups=2, bias=False),
        nn.MaxPool2d(3, stride=2, padding=1)]),
    # depthwise; average pooling counting the padding (PyTorch's default).
    "depthwise_avgpool3s2p1": ((4, 10, 10), lambda: [
        nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.Tanh(),
        nn.AvgPool2d(3, stride=2, padding=1)]),
    # stride 3 leaves the last row and column out of every window; average
    # pooling without the padding in the divisor, with ceil_mode.
    # (20 -> 6: the last window is clipped at the padded end).
    "conv_s3_avgpool_nopad_ceil": ((2, 20, 20), lambda: [
        nn.Conv2d(2, 5, 3, stride=3), nn.Sigmoid(),
        nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                     count_include_pad=False)]),
    # a 1x1 convolution with padding (its border outputs see only padding:
    # the input gradient drops them); rectangular kernel, mixed
    # strides/dilations/padding; ceil_mode max pooling.
    "conv_rect_maxpool_ceil": ((3, 11, 9), lambda: [
        nn.Conv2d(3, 4, 1, padding=1),
        nn.Conv2d(4, 4, (3, 2), stride=(2, 1), padding=(2, 1),
                  dilation=(1, 2)),
        nn.MaxPool2d(3, stride=2, ceil_mode=True)]),
    # two conv layers (the second needs the input gradient of the first's
    # output), groups 2 with stride 2 and padding, dilated max pooling.
    "two_convs_g2_s2": ((4, 14, 14), lambda: [
        nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 6, 3, stride=2, padding=1, groups=2), nn.ReLU(),
        nn.MaxPool2d(2, stride=1, dilation=2),
        nn.AvgPool2d(2)]),
    # a 1x1 convolution and a kernel-sized stride, average pooling with
    # count_include_pad and ceil_mode (windows clipped at the padded end).
    # (ONNX's AveragePool before opset 19 lacks PyTorch's rule that the last
    # ceil_mode window starts inside the input or the left padding, so the
    # cases avoid sizes where that rule drops a window.)
    "conv1x1_avgpool_ceil_pad": ((3, 20, 20), lambda: [
        nn.Conv2d(3, 4, 1), nn.ReLU(),
        nn.Conv2d(4, 4, 3, stride=3, padding=1, dilation=2),
        nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)]),
    # the usual ResNet stem: conv without bias, batch norm (running
    # statistics compared too), ReLU, 3x3 stride-2 max pooling.
    "conv_bn_relu_maxpool": ((3, 12, 12), lambda: [
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
        nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1)]),
    # a ResNet downsampling block at odd sizes: 3x3 stride 2 with padding,
    # then a 1x1 stride-2 projection and a 3x3 stride-1 conv (the shapes
    # oneDNN's 1x1 and direct kernels take, channel counts not a multiple
    # of the 16-lane blocks).
    "resnet_down_odd": ((7, 11, 11), lambda: [
        nn.Conv2d(7, 12, 3, stride=2, padding=1, bias=False), nn.ReLU(),
        nn.Conv2d(12, 10, 1, stride=2), nn.ReLU(),
        nn.Conv2d(10, 10, 3, padding=1)]),
    # a MobileNet block: depthwise 3x3 stride 2, pointwise 1x1, depthwise
    # 5x5 with dilation 2 and asymmetric reach (odd size 13).
    "mobile_dw_s2_pw_dw5": ((6, 13, 13), lambda: [
        nn.Conv2d(6, 6, 3, stride=2, padding=1, groups=6, bias=False),
        nn.ReLU(), nn.Conv2d(6, 9, 1), nn.Tanh(),
        nn.Conv2d(9, 9, 5, padding=3, dilation=2, groups=9)]),
    # images smaller than the windows (ImageNet networks on CIFAR-sized
    # inputs): rows or columns of taps that only ever meet padding are
    # cropped from the filter (a 2x3 input with stride 2 crops the rows
    # only, a 1x2 input keeps the centre row); their filter gradient is 0.
    "crop_small_images": ((4, 2, 3), lambda: [
        nn.Conv2d(4, 6, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(6, 5, 3, padding=1, bias=False), nn.ReLU(),
        nn.Conv2d(5, 5, 3, padding=1)]),
    # a 1x1 image: every 3x3 convolution is its centre tap (a GEMM), also
    # dilated.
    "crop_1x1_image": ((6, 1, 1), lambda: [
        nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=2, dilation=2, bias=False), nn.Tanh(),
        nn.Conv2d(8, 4, 3, padding=1)]),
    # pointwise convolutions over 2x2 maps: one GEMM over every sample's
    # positions (activations transposed to [C, N*H*W]), with and without
    # bias.
    "pointwise_small_maps": ((32, 2, 2), lambda: [
        nn.Conv2d(32, 32, 1), nn.ReLU(),
        nn.Conv2d(32, 48, 1, bias=False), nn.Tanh(),
        nn.Conv2d(48, 40, 1)]),
}


def train_torch(model, data, B, steps, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for i in range(steps):
        x = torch.from_numpy(data["x"][i * B:(i + 1) * B])
        y = torch.from_numpy(data["y"][i * B:(i + 1) * B])
        opt.zero_grad()
        loss = model(x, y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, {k: v.detach().numpy().copy()
                    for k, v in model.state_dict().items()}


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd), r.stdout,
                                                  r.stderr))
    return r.stdout



def train_effopt(args, work, onnx_path, npz_path, steps):
    effx = os.path.join(work, "model.effx")
    run([tool(args, "effc"), onnx_path, "-o", effx, "--optimizer", "sgd",
         "--lr", repr(args.lr)] + args.effc)
    if args.runner.startswith("shim:"):
        out = os.path.join(work, "final.npz")
        text = run([sys.executable, args.runner[5:], effx, npz_path,
                    str(steps), out])
        losses = [float(line.split()[1]) for line in text.splitlines()
                  if line.strip()]
        return losses, dict(np.load(out))
    log = os.path.join(work, "loss.jsonl")
    ckpt = os.path.join(work, "final.safetensors")
    run([tool(args, "effrun"), effx, "--data", npz_path, "--steps",
         str(steps), "--log", log, "--save", ckpt])
    rows = [json.loads(line) for line in open(log) if line.strip()]
    return [r["loss"] for r in rows], read_safetensors(ckpt)


def check_case(args, name, shape, layers):
    torch.manual_seed(args.seed)
    rng = np.random.RandomState(args.seed)
    B, steps = args.batch, args.steps
    model = Net(layers(), shape)
    data = {"x": rng.randn(steps * B, *shape).astype(np.float32),
            "y": rng.randint(0, 5, size=steps * B).astype(np.int64)}
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    onnx_path = os.path.join(work, "model.onnx")
    npz_path = os.path.join(work, "data.npz")
    export_graph(model, (torch.from_numpy(data["x"][:B]),
                         torch.from_numpy(data["y"][:B])), ["x", "y"],
                 onnx_path, output_names=["loss"])
    np.savez(npz_path, **data)

    problems = []
    try:
        ours, state = train_effopt(args, work, onnx_path, npz_path, steps)
    except RuntimeError as e:
        return False, str(e).strip().splitlines()[-1], 0.0, 0.0
    ref_losses, ref_state = train_torch(model, data, B, steps, args.lr)

    worst_abs = worst_rel = 0.0
    if len(ours) != steps:
        problems.append("%d losses logged, expected %d" % (len(ours), steps))
    for i, (got, want) in enumerate(zip(ours, ref_losses)):
        err = abs(got - want)
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / max(abs(want), 1e-30))
        if err > args.atol + args.rtol * abs(want):
            problems.append("step %d loss %.7g, torch %.7g" % (i, got, want))
    for key, want in ref_state.items():
        if key.endswith("num_batches_tracked"):
            continue  # torch's counter; effopt keeps one step counter
        if key not in state:
            problems.append("no final value of %s" % key)
            continue
        got = np.asarray(state[key], dtype=np.float64).reshape(want.shape)
        want = want.astype(np.float64)
        err = np.abs(got - want)
        worst_abs = max(worst_abs, float(err.max()))
        big = np.abs(want) > 1e-3  # relative error where it means something
        if big.any():
            worst_rel = max(worst_rel, float((err[big] / np.abs(want[big])).max()))
        bad = err > args.atol + args.rtol * np.abs(want)
        if bad.any():
            problems.append("%s: %d of %d values differ (max abs err %.3g)" %
                            (key, int(bad.sum()), err.size, err.max()))
    return not problems, "; ".join(problems), worst_abs, worst_rel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--bin", help="directory with effc and effrun")
    ap.add_argument("--runner", default="effrun",
                    help="effrun, or shim:SCRIPT (EFFX NPZ STEPS OUT.npz)")
    ap.add_argument("--only", action="append", help="run only these cases")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--effc", action="append", default=[],
                    help="an extra effc flag (e.g. --effc=--convolution=direct)")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)

    passed = failed = 0
    for name, (shape, layers) in CASES.items():
        if args.only and name not in args.only:
            continue
        ok, why, abs_err, rel_err = check_case(args, name, shape, layers)
        print("%-34s %s  max abs err %.2e  max rel err %.2e%s" %
              (name, "PASS" if ok else "FAIL", abs_err, rel_err,
               "" if ok else "  (" + why + ")"))
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

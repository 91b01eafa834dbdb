#!/usr/bin/env python3
"""PyTorch peer of bench/kernels.cpp: the same models, batches and step.

One step = forward + loss + backward + in-place SGD update with L2 decay,
single thread (torch.set_num_threads(1)). Prints one JSON line:
  {"torch": ..., "threads": 1, "data": "a9a"|"synthetic",
   "mlp_steps_per_s": ..., "lr32_steps_per_s": ..., "lr_full_steps_per_s": ..., ...}
Rates are steps per CPU second of this process: median and best of --rounds
rounds of --seconds CPU seconds each; the median per wall second is also given.

  MLP 784-256-10 (ReLU), batch 64, random U[0,1) data, 16 batches cycled,
  softmax cross-entropy; L2 (l2/2 |W|^2) as decay of the weights only.
  LeNet-5 and VGG_SMALL (atrain's presets, cnn.hpp) on the MLP's data read as
  1x28x28 images, batch 64; L2 decay on conv and dense weights.
  Logistic regression on a9a (123 features; --a9a PATH, LIBSVM, gzip or plain;
  synthetic of the same shape if absent): batch 32 (consecutive slices cycled)
  and the full set; mean log(1 + exp(-s z)); L2 decay on w and b.
The gradient step equals atrain's; torch does not compute the L2 term's value
(atrain does: one extra pass over the weights).
"""
import argparse
import gzip
import json
import os
import statistics
import time

# Single thread for every backend before torch (and the BLAS it loads) starts:
# this Debian torch calls BLAS through the generic libblas.so.3 (OpenBLAS via
# alternatives), which torch.set_num_threads does not reach.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

LR, L2 = 0.01, 1e-4


def sgd_update(params, decayed):
    """p -= LR * (grad + L2 * p) for p in decayed, p -= LR * grad otherwise:
    atrain's step. In place: of the variants tried on this box it was the
    fastest (torch.optim.SGD(weight_decay=...) allocates a fresh gradient-sized
    tensor per parameter and step and measured 1.5-2.5x slower; an L2 term in
    the loss 5-7x slower)."""
    with torch.no_grad():
        for w in decayed:
            w.grad.add_(w, alpha=L2)
        for p in params:
            p.add_(p.grad, alpha=-LR)


def measure(out, key, step, seconds, rounds):
    """Steps per CPU second of this process (median, best) and per wall second
    (median), like bench/kernels.cpp."""
    n = 0
    end = time.process_time() + min(0.3, seconds)
    while time.process_time() < end:
        step(n)
        n += 1
    cpu, wall = [], []
    for _ in range(rounds):
        steps = 0
        c0, w0 = time.process_time(), time.perf_counter()
        while True:
            for _ in range(4):
                step(n)
                n += 1
                steps += 1
            elapsed = time.process_time() - c0
            if elapsed >= seconds:
                break
        cpu.append(steps / elapsed)
        wall.append(steps / (time.perf_counter() - w0))
    out[key + "_steps_per_s"] = statistics.median(cpu)
    out[key + "_best"] = max(cpu)
    out[key + "_wall_steps_per_s"] = statistics.median(wall)


def load_libsvm(path, dim):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    labels, rows = [], []
    with opener(path, "rt") as f:
        for line in f:
            tok = line.split()
            if not tok:
                continue
            labels.append(1 if int(float(tok[0])) == 1 else 0)
            rows.append([(int(k) - 1, float(v)) for k, v in (t.split(":") for t in tok[1:])])
    x = torch.zeros(len(rows), dim)
    for i, r in enumerate(rows):
        for k, v in r:
            x[i, k] = v
    return x, torch.tensor(labels, dtype=torch.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--a9a", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads()}

    # ---- MLP 784-256-10, batch 64
    pool, batch = 16, 64
    mx = torch.rand(pool, batch, 784)
    my = torch.randint(0, 10, (pool, batch))
    net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    weights = [net[0].weight, net[2].weight]

    def mlp_step(n):
        b = n % pool
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(mx[b]), my[b]).backward()
        sgd_update(net.parameters(), weights)

    measure(out, "mlp", mlp_step, args.seconds, args.rounds)

    # ---- CNNs, batch 64, the MLP's rows as 1x28x28 images
    nn = torch.nn
    lenet = nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))
    blocks, ch = [], 1
    for out_ch in (32, 64, 128):
        blocks += [nn.Conv2d(ch, out_ch, 3, padding=1), nn.BatchNorm2d(out_ch), nn.ReLU(),
                   nn.MaxPool2d(2)]
        ch = out_ch
    vgg = nn.Sequential(*blocks, nn.Flatten(), nn.Linear(128 * 3 * 3, 128), nn.ReLU(),
                        nn.Linear(128, 10))
    images = mx.view(pool, batch, 1, 28, 28)
    for key, cnn in (("lenet5", lenet), ("vgg_small", vgg)):
        decayed = [m.weight for m in cnn if isinstance(m, (nn.Conv2d, nn.Linear))]

        def cnn_step(n, cnn=cnn, decayed=decayed):
            b = n % pool
            cnn.zero_grad(set_to_none=True)
            F.cross_entropy(cnn(images[b]), my[b]).backward()
            sgd_update(cnn.parameters(), decayed)

        measure(out, key, cnn_step, args.seconds, args.rounds)

    # ---- logistic regression, a9a shape
    if args.a9a:
        x, y = load_libsvm(args.a9a, 123)
        out["data"] = "a9a"
    else:
        g = torch.Generator().manual_seed(7)
        x = (torch.rand(32561, 123, generator=g) < 0.113).float()
        y = (torch.rand(32561, generator=g) < 0.24).float()
        out["data"] = "synthetic"
    lin = torch.nn.Linear(123, 1)

    def lr_step(xb, yb):
        lin.zero_grad(set_to_none=True)
        F.binary_cross_entropy_with_logits(lin(xb).squeeze(1), yb).backward()
        sgd_update(lin.parameters(), lin.parameters())  # w and b decayed, as atrain

    nb = x.shape[0] // 32
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.zero_()
    measure(
        out, "lr32", lambda n: lr_step(x[(n % nb) * 32:(n % nb) * 32 + 32], y[(n % nb) * 32:(n % nb) * 32 + 32]),
        args.seconds, args.rounds)
    with torch.no_grad():
        lin.weight.zero_()
        lin.bias.zero_()
    measure(out, "lr_full", lambda n: lr_step(x, y), args.seconds, args.rounds)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

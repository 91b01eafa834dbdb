#!/usr/bin/env python3
"""PyTorch DDP peer of atrain's Ring-AllReduce SGD on the real clock.

N worker processes (torch.distributed, backend gloo, TCP on 127.0.0.1) train
the MLP (or, --model lenet5, the LeNet-5 CNN) of an atrain spec on exactly the rows `atrain shards` exported for
each node (rank r = node r), synchronously: DDP averages the N minibatch
gradients with an all-reduce and every rank takes the same SGD step

    x -= lr * (mean_i grad f_i(x) + l2 * W)      (L2 on the weights only)

which is atrain's Ring-AllReduce step (x -= gamma/n * sum_i g_i with
g_i = grad f_i + l2 W). Like atrain:
  - MLP dim-hidden...-classes, ReLU (or LeNet-5 as atrain's LENET5 preset),
    softmax cross-entropy, He-uniform weights U(+-sqrt(6/fan_in)) and zero
    biases (same scheme, not the same numbers: torch's generator), identical
    on every rank; L2 on conv and dense weights;
  - each rank draws batches without replacement from its own shard,
    reshuffled every epoch;
  - a straggler waits (factor - 1) x its own measured compute time (batch
    gather + forward + backward) plus --delay seconds per step before its
    gradient enters the all-reduce, as actors/src/compute.cpp does on the
    real clock (faults.straggle factor and add_seconds). The wait is
    inside a DDP communication hook on the straggler's rank only (the same
    all-reduce of the mean as DDP's default; a Python hook costs ~10% of a
    step here, so the other ranks, and every rank without a straggler, keep
    DDP's built-in all-reduce);
  - evaluation runs concurrently, in its own process, as atrain's evaluator
    actor does: rank 0 sends a copy of the model every --eval-period seconds
    of wall time (the first at t = 0); the evaluator computes test accuracy
    on the test rows (and train loss on atrain's train-loss rows) and stamps
    the row with the snapshot time. When it falls behind it takes the newest
    snapshot and evaluates the skipped ones after the stop. Time to target = the first stamp whose
    accuracy >= --target. The workers stop at the step after rank 0 learns
    the target was reached or --time-limit passed.
t = 0 is after every rank loaded its shard, built DDP and passed a barrier
(atrain's clock also starts after loading).

Threads: OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1 before torch loads and
torch.set_num_threads(1) (this Debian torch reaches OpenBLAS through the
generic libblas, which set_num_threads does not control; see
docs/PERFORMANCE.md "Kernels"). gloo has its own I/O threads.

Prints one JSON line on stdout:
  {"peer": "ddp_gloo", "torch": ..., "workers": N, "straggler": k, "factor": f,
   "time_to_target": s | null, "steps": ..., "final_accuracy": ...,
   "evals": [[t, rank 0 step, test accuracy], ...]}
Exits 0 with "torch not installed: peer skipped" on stderr (and
{"skipped": ...} on stdout) when torch cannot be imported.

  atrain shards config/mnist_mlp.textproto --set nodes=4 --out /tmp/shards.json
  /usr/bin/python3 bench/ddp_peer.py --shards /tmp/shards.json --lr 0.5 --target 0.95 \\
      [--straggler 3 --factor 4 | --straggler 3 --delay 0.005]
"""
import argparse
import gzip
import json
import math
import os
import queue
import socket
import struct
import sys
import time

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import multiprocessing as mp  # noqa: E402

try:  # torch needs numpy; a Python without either skips the peer
    import numpy as np  # noqa: E402
    import torch  # noqa: E402
    import torch.distributed as dist  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
    from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
except ImportError:
    torch = None


def read_idx(path):
    """IDX file (plain or gzip) as a numpy uint8 array of its dims."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    zero, kind, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or kind != 0x08:
        raise SystemExit(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_rows(part, rows=None):
    """Features (float32 in [0, 1], atrain's v / 255) and labels (int64) of the
    first part['rows'] rows of an IDX pair, or of `rows` among them."""
    x = read_idx(part["path"])
    y = read_idx(part["labels_path"])
    n = part["rows"]
    if x.shape[0] < n or y.shape[0] < n:
        raise SystemExit(f"{part['path']}: {x.shape[0]} rows, the split says {n}")
    x = x.reshape(x.shape[0], -1)[:n]
    y = y[:n]
    if rows is not None:
        x, y = x[rows], y[rows]
    return (torch.from_numpy(x.astype(np.float32) / np.float32(255.0)),
            torch.from_numpy(y.astype(np.int64)))


def he_uniform(layers):
    """atrain's init: weights U(+-sqrt(6/fan_in)), zero biases."""
    for m in layers:
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            fan_in = m.weight[0].numel()
            a = math.sqrt(6.0 / fan_in)
            torch.nn.init.uniform_(m.weight, -a, a)
            torch.nn.init.zeros_(m.bias)
    return torch.nn.Sequential(*layers)


def make_mlp(dim, hidden, classes, seed):
    torch.manual_seed(seed)
    widths = [dim] + hidden + [classes]
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 1 < len(widths) - 1:
            layers.append(torch.nn.ReLU())
    return he_uniform(layers)


def make_lenet5(dim, classes, seed):
    """atrain's LENET5 preset (kernels/include/atrain/kernels/cnn.hpp) on
    1 x 28 x 28 rows: conv 6 5x5 pad 2, relu, max 2, conv 16 5x5, relu, max 2,
    dense 120, relu, dense 84, relu, dense classes."""
    if dim != 28 * 28:
        raise SystemExit(f"--model lenet5 needs 28x28 rows, the split has {dim} features")
    torch.manual_seed(seed)
    nn = torch.nn
    return he_uniform([
        nn.Unflatten(1, (1, 28, 28)),
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, classes)])


def make_model(args, split):
    if args.model == "lenet5":
        return make_lenet5(split["dim"], split["classes"], args.seed)
    return make_mlp(split["dim"], args.hidden, split["classes"], args.seed)


def decayed_weights(model):
    """The weights L2 applies to (conv and dense, not biases), as in atrain."""
    return [m.weight for m in model if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))]


class straggle_state:
    """What the communication hook needs: when this step's compute began and
    how much longer than that this rank is made to take."""

    def __init__(self, factor, delay=0.0):
        self.factor = factor
        self.delay = delay
        self.began = 0.0
        self.waited = False
        self.wait_seconds = 0.0

    def slow(self):
        return self.factor > 1 or self.delay > 0


def straggle_allreduce_hook(state, bucket):
    """DDP's default all-reduce (mean), after the straggler's wait: the
    gradient counts as done (factor - 1) x measured compute time + delay later."""
    if state.slow() and not state.waited:
        state.waited = True
        took = time.perf_counter() - state.began
        wait = (state.factor - 1.0) * took + state.delay
        state.wait_seconds += wait
        time.sleep(wait)
    tensor = bucket.buffer()
    tensor.div_(dist.get_world_size())
    fut = dist.all_reduce(tensor, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def worker(rank, args, split, port, shared):
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    n = split["nodes"]
    dist.init_process_group("gloo", rank=rank, world_size=n)
    x, y = load_rows(split["train"], np.asarray(split["shards"][rank], dtype=np.int64))
    model = DDP(make_model(args, split))
    state = (straggle_state(args.factor, args.delay) if rank == args.straggler
             else straggle_state(1.0))
    if state.slow():  # everyone else keeps DDP's built-in (C++) all-reduce
        model.register_comm_hook(state, straggle_allreduce_hook)
    weights = decayed_weights(model.module)
    params = list(model.parameters())
    gen = np.random.default_rng([args.seed, rank])
    order = gen.permutation(len(y))
    at = 0
    dist.barrier()
    if rank == 0:
        shared["t0"].value = time.perf_counter()
    dist.barrier()
    t0 = shared["t0"].value
    next_eval = 0.0
    step = 0
    while True:
        if rank == 0:
            now = time.perf_counter() - t0
            if shared["stop_at"].value < 0 and (shared["reached"].is_set()
                                                or now >= args.time_limit):
                # Every other rank is at most at the top of this step (it
                # cannot finish this step's all-reduce without rank 0), so
                # all of them read the stop at the top of the next one.
                shared["stop_at"].value = step + 1
            if now >= next_eval:
                flat = torch.cat([p.detach().reshape(-1) for p in params]).numpy().copy()
                shared["snapshots"].put((now, step, flat))
                next_eval = now + args.eval_period
        if 0 <= shared["stop_at"].value <= step:
            break
        state.began = time.perf_counter()
        state.waited = False
        if at + args.batch > len(order):  # a batch continues into the next epoch
            rest = order[at:]
            order = gen.permutation(len(y))
            at = args.batch - len(rest)
            idx = np.concatenate([rest, order[:at]])
        else:
            idx = order[at:at + args.batch]
            at += args.batch
        idx = torch.from_numpy(idx)
        loss = F.cross_entropy(model(x[idx]), y[idx])
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for w in weights:
                w.grad.add_(w, alpha=args.l2)
            for p in params:
                p.add_(p.grad, alpha=-args.lr)
        step += 1
    if rank == 0:
        shared["snapshots"].put(None)
    shared["results"].put((rank, step, state.wait_seconds))
    dist.barrier()
    dist.destroy_process_group()


def evaluator(args, split, shared):
    """Evaluates the newest snapshot first: on 2 shared cores a CNN evaluation
    can take longer than --eval-period, and evaluating every snapshot in order
    let the workers train on long past the target (PERFORMANCE.md). Snapshots
    skipped while behind are evaluated after the stop, so the table of
    evaluations, and the time to target (its first stamp >= target), is
    complete and exact; only the moment the workers stop depends on the lag."""
    torch.set_num_threads(1)
    xt, yt = load_rows(split["test"])
    xl, yl = load_rows(split["train"], np.asarray(split["train_eval_rows"], dtype=np.int64))
    model = make_model(args, split)
    params = list(model.parameters())

    def evaluate(item):
        t, step, flat = item
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(torch.from_numpy(flat), params)
            acc = (model(xt).argmax(1) == yt).double().mean().item()
            loss = F.cross_entropy(model(xl), yl).item()
            loss += 0.5 * args.l2 * sum(float((w ** 2).sum()) for w in decayed_weights(model))
        return (t, step, acc, loss)

    evals, skipped, done = [], [], False
    while not done:
        batch = [shared["snapshots"].get()]
        while True:
            try:
                batch.append(shared["snapshots"].get_nowait())
            except queue.Empty:
                break
        done = batch[-1] is None
        batch = [b for b in batch if b is not None]
        if not batch:
            continue
        skipped += batch[:-1]
        evals.append(evaluate(batch[-1]))
        if evals[-1][2] >= args.target and not shared["reached"].is_set():
            shared["reached"].set()
    evals += [evaluate(item) for item in skipped]
    evals.sort(key=lambda e: e[0])
    shared["results"].put(("evals", evals, len(skipped)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", required=True, help="JSON from `atrain shards SPEC --out FILE`")
    ap.add_argument("--model", choices=("mlp", "lenet5"), default="mlp",
                    help="the spec's model: an MLP (--hidden) or atrain's LENET5 preset")
    ap.add_argument("--hidden", type=int, nargs="*", default=[128])
    ap.add_argument("--batch", type=int, default=64, help="per rank")
    ap.add_argument("--lr", type=float, default=0.1, help="SGD step (atrain allreduce step_size)")
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds of training")
    ap.add_argument("--eval-period", type=float, default=0.25, help="seconds")
    ap.add_argument("--straggler", type=int, default=-1, help="rank that computes slowly")
    ap.add_argument("--factor", type=float, default=1.0, help="its slowdown (>= 1)")
    ap.add_argument("--delay", type=float, default=0.0,
                    help="seconds it waits on top, per step (>= 0): a fixed-delay straggler")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if torch is None:
        print("torch not installed: peer skipped", file=sys.stderr)
        print(json.dumps({"peer": "ddp_gloo", "skipped": "torch not installed"}))
        return 0
    with open(args.shards) as f:
        split = json.load(f)
    if split["format"] != "IDX":
        raise SystemExit(f"{args.shards}: format {split['format']}: the peer reads IDX (MNIST) only")
    if args.factor < 1:
        raise SystemExit("--factor must be >= 1")
    if args.delay < 0:
        raise SystemExit("--delay must be >= 0")
    n = split["nodes"]
    if args.straggler >= n:
        raise SystemExit(f"--straggler {args.straggler}: the split has ranks 0..{n - 1}")
    ctx = mp.get_context("spawn")
    shared = {"t0": ctx.Value("d", 0.0), "stop_at": ctx.Value("q", -1),
              "reached": ctx.Event(), "snapshots": ctx.Queue(), "results": ctx.Queue()}
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, args, split, port, shared)) for r in range(n)]
    procs.append(ctx.Process(target=evaluator, args=(args, split, shared)))
    wall = time.perf_counter()
    for p in procs:
        p.start()
    steps, waits, evals = {}, {}, None
    # loading, a margin, and an evaluator behind its snapshots (a CNN evaluation
    # can take longer than --eval-period)
    deadline = time.perf_counter() + 2 * args.time_limit + 120
    while len(steps) < n or evals is None:
        try:
            item = shared["results"].get(timeout=max(1.0, deadline - time.perf_counter()))
        except Exception:
            for p in procs:
                p.kill()
            raise SystemExit("ddp_peer: a process did not finish in time (killed)")
        if item[0] == "evals":
            evals, evaluated_late = item[1], item[2]
        else:
            steps[item[0]] = item[1]
            waits[item[0]] = item[2]
    for p in procs:
        p.join()
    ttt = next((t for t, _, acc, _ in evals if acc >= args.target), None)
    print(json.dumps({
        "peer": "ddp_gloo", "torch": torch.__version__, "workers": n, "lr": args.lr,
        "batch": args.batch, "target": args.target, "straggler": args.straggler,
        "factor": args.factor, "delay": args.delay, "time_to_target": ttt, "steps": steps[0],
        "gradients": sum(steps.values()), "straggler_wait_seconds": waits.get(args.straggler, 0.0),
        "final_accuracy": evals[-1][2] if evals else None,
        "final_train_loss": evals[-1][3] if evals else None,
        "wall_seconds": time.perf_counter() - wall, "evaluated_after_stop": evaluated_late,
        "evals": [[round(t, 4), s, round(a, 5)] for t, s, a, _ in evals]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Claim 1 on the real clock: atrain's Ring-AllReduce and R-FAST against
PyTorch DDP (gloo) in one invocation, with and without one straggler.

Every run trains the MLP of SPEC (default config/mnist_mlp.textproto) on the
same N nodes, the same data split (`atrain shards`, per seed) and the same
straggler (node/rank K computes FACTOR x slower: it waits (FACTOR - 1) x its
measured compute time per gradient, atrain's real-clock straggle), until the
evaluated model reaches --target test accuracy. Per repetition r the seed is
1 + r for every system (split, initial model and batches change with it);
within a repetition the systems and conditions run one after another, in the
same order, so slow phases of a shared machine hit all of them.

  atrain allreduce : atrain run SPEC --set clock=REAL nodes=N
                     algorithm.allreduce.step_size=GAMMA link.latency_seconds=0 ...
  atrain rfast     : the same with SPEC's own rfast block
  ddp (gloo)       : bench/ddp_peer.py, N processes + an evaluator process, lr GAMMA
  ALG, ALG_hosts  : any other atrain algorithm (adpsgd, dpsgd, ...), at --step ALG=G
  allreduce_hosts, rfast_hosts, ALG_hosts : the atrain runs with every node in its own
                     `atrain node` process on 127.0.0.1 (N hosts, node i on host
                     i; the driver evaluates in another process), over CAF/TCP like
                     DDP's gloo — the like-for-like comparison
  shipped_ALG      : config/mnist_hosts/ALG.textproto as shipped (its step size; the
                     seed, target, evaluation period, time limit and straggler set
                     here), across the N hosts like *_hosts

--delay S makes the straggler a fixed-delay one: it waits S seconds more per
gradient (faults.straggle add_seconds; the DDP rank sleeps S per step), with
--factor 1 unless given: a delay this machine's scheduler cannot hide, unlike
(FACTOR - 1) x a measured time that stretches with the load.

Prints a table of time to target (mean +- sample std over the repetitions
that reached it), the gradients (all nodes) and gradients per second up to
the first evaluation at the target, each system's ratio against DDP measured
in the same invocation, and each system's slowdown from the straggler; writes
DIR/results.json and DIR/table.md. DDP rows are skipped ("torch not
installed: peer skipped") when --python cannot import torch.

  python3 bench/realtime_claim1.py build/atrain [--nodes 4] [--target 0.95] [--reps 3]
      [--straggler 3 --factor 4 | --delay S] [--allreduce-step 0.5] [--rfast-step G] [--rfast-phi-min P] [--rfast-set K=V]... [--python /usr/bin/python3]
      [--step adpsgd=0.1]... [--alg-set adpsgd:K=V]... [--ddp-model lenet5] [--mnist DIR] [--out build/realtime_claim1]
      [--systems allreduce,rfast,ddp,allreduce_hosts,rfast_hosts,shipped_adpsgd,...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd, log):
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
        f.write(done.stdout)
    return done


def common_sets(args, seed, straggle):
    sets = ["clock=REAL", f"seed={seed}", f"nodes={args.nodes}", "link.latency_seconds=0",
            f"stop.target_accuracy={args.target}", f"stop.time_seconds={args.time_limit}",
            "stop.stop_at_target=true", f"eval.period_seconds={args.eval_period}"]
    if args.mnist:
        for field, name in (("train_path", "train-images-idx3-ubyte.gz"),
                            ("train_labels_path", "train-labels-idx1-ubyte.gz"),
                            ("test_path", "t10k-images-idx3-ubyte.gz"),
                            ("test_labels_path", "t10k-labels-idx1-ubyte.gz")):
            sets.append(f"dataset.{field}={os.path.join(os.path.abspath(args.mnist), name)}")
    if straggle:
        sets.append(f"faults.straggle=[{{node: {args.straggler} factor: {args.factor} "
                    f"add_seconds: {args.delay} from_seconds: 0}}]")
    return sets


def atrain_run(args, name, extra, seed, straggle, out, cluster=None, spec=None):
    sets = common_sets(args, seed, straggle) + extra
    if cluster is not None:  # across `atrain node` processes
        cmd = cluster.command(spec or args.spec, sets, out)
    else:
        cmd = [args.atrain, "run", args.spec, "--no-progress", "--out", out]
        for s in sets:
            cmd += ["--set", s]
    done = run(cmd, out + ".log")
    if done.returncode != 0:
        raise SystemExit(f"{name}: atrain run failed (exit {done.returncode}), see {out}.log")
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    at = next((m for m in rep["metrics"] if m["test_accuracy"] >= args.target), None)
    return {"time_to_target": rep.get("time_to_target"),
            "gradients_to_target": None if at is None else int(at["gradients"]),
            "gradients": int(rep["gradients_total"]),
            "final_accuracy": rep["final"]["test_accuracy"],
            "duration": rep["duration_seconds"]}


def ddp_run(args, seed, straggle, out):
    shards = out + "_shards.json"
    cmd = [args.atrain, "shards", args.spec, "--out", shards]
    for s in common_sets(args, seed, False):
        cmd += ["--set", s]
    if run(cmd, out + "_shards.log").returncode != 0:
        raise SystemExit(f"atrain shards failed, see {out}_shards.log")
    cmd = [args.python, os.path.join(HERE, "ddp_peer.py"), "--shards", shards,
           "--lr", str(args.allreduce_step), "--target", str(args.target),
           "--time-limit", str(args.time_limit), "--eval-period", str(args.eval_period),
           "--seed", str(seed), "--model", args.ddp_model]
    if straggle:
        cmd += ["--straggler", str(args.straggler), "--factor", str(args.factor),
                "--delay", str(args.delay)]
    done = run(cmd, out + ".log")
    if done.returncode != 0:
        raise SystemExit(f"ddp peer failed (exit {done.returncode}), see {out}.log")
    rep = json.loads(done.stdout.strip().splitlines()[-1])
    if "skipped" in rep:
        return None
    at = next((e for e in rep["evals"] if e[2] >= args.target), None)
    return {"time_to_target": rep["time_to_target"],
            "gradients_to_target": None if at is None else at[1] * rep["workers"],
            "gradients": rep["gradients"],
            "final_accuracy": rep["final_accuracy"], "duration": rep["wall_seconds"]}


def has_torch(python):
    try:
        return subprocess.run([python, "-c", "import torch"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def fmt(xs):
    if not xs:
        return "not reached"
    if len(xs) == 1:
        return f"{xs[0]:.2f}"
    return f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs):.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("atrain", help="path to the atrain binary")
    ap.add_argument("--spec", default=os.path.join(ROOT, "config", "mnist_mlp.textproto"))
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--straggler", type=int, default=3)
    ap.add_argument("--factor", type=float, default=None, help="default 4, or 1 with --delay")
    ap.add_argument("--delay", type=float, default=0.0,
                    help="the straggler's fixed extra seconds per gradient")
    ap.add_argument("--allreduce-step", type=float, default=0.5,
                    help="gamma of atrain allreduce and DDP's SGD lr")
    ap.add_argument("--rfast-step", type=float, default=None,
                    help="gamma of atrain rfast (default: SPEC's rfast block)")
    ap.add_argument("--rfast-phi-min", type=float, default=None,
                    help="phi_min of atrain rfast (default: SPEC's rfast block)")
    ap.add_argument("--rfast-set", action="append", default=[], metavar="K=V",
                    help="an extra override of the atrain rfast runs (repeatable), e.g. "
                         "cost.real_min_seconds=0.005")
    ap.add_argument("--step", action="append", default=[], metavar="ALG=G",
                    help="gamma of the atrain system ALG or ALG_hosts other than allreduce and rfast "
                         "(repeatable), e.g. adpsgd=0.1")
    ap.add_argument("--alg-set", action="append", default=[], metavar="ALG:K=V",
                    help="an extra override of the atrain system ALG or ALG_hosts of --step's kind "
                         "(repeatable), e.g. adpsgd:topology.builder=RING")
    ap.add_argument("--ddp-model", choices=("mlp", "lenet5"), default="mlp",
                    help="the model DDP trains: SPEC's (an MLP of 128 hidden, or LENET5)")
    ap.add_argument("--eval-period", type=float, default=0.25)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--systems", default="allreduce,rfast,ddp")
    ap.add_argument("--mnist", help="directory of the four MNIST IDX files (default: SPEC's paths)")
    ap.add_argument("--python", default=os.environ.get("ATRAIN_PYTHON", "/usr/bin/python3"))
    ap.add_argument("--out", default="realtime_claim1")
    args = ap.parse_args()
    args.atrain = os.path.abspath(args.atrain)
    try:
        args.step = {k: float(v) for k, v in (kv.split("=", 1) for kv in args.step)}
    except ValueError:
        raise SystemExit("--step takes ALG=G, e.g. adpsgd=0.1")
    alg_set = {}
    for a in args.alg_set:
        alg, sep, kv = a.partition(":")
        if not sep or "=" not in kv:
            raise SystemExit(f"--alg-set {a}: give ALG:K=V, e.g. adpsgd:topology.builder=RING")
        alg_set.setdefault(alg, []).append(kv)
    args.alg_set = alg_set
    if args.factor is None:
        args.factor = 1.0 if args.delay > 0 else 4.0
    systems = args.systems.split(",")
    if "ddp" in systems and not has_torch(args.python):
        print("torch not installed: peer skipped", file=sys.stderr)
        systems.remove("ddp")
    os.makedirs(args.out, exist_ok=True)
    slow = f"x{args.factor:g}" if args.factor != 1 else ""
    slow += f" +{args.delay * 1e3:g} ms" if args.delay > 0 else ""
    conditions = [("none", False), (f"node {args.straggler} {slow.strip()}", True)]
    results = {c: {s: [] for s in systems} for c, _ in conditions}
    cluster = None
    if any(s.endswith("_hosts") or s.startswith("shipped_") for s in systems):
        sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
        from hosts import Cluster  # noqa: E402
        cluster = Cluster(args.atrain, args.nodes)
    try:
        run_all(args, systems, conditions, results, cluster)
    finally:
        if cluster is not None:
            cluster.stop()
    report_table(args, systems, conditions, results)
    return 0


def run_all(args, systems, conditions, results, cluster):
    began = time.time()
    for rep in range(args.reps):
        seed = 1 + rep
        for cond, straggle in conditions:
            for sysname in systems:
                out = os.path.join(args.out, f"{sysname}_{'straggle' if straggle else 'none'}_s{seed}")
                algo = sysname[:-len("_hosts")] if sysname.endswith("_hosts") else sysname
                where = cluster if sysname.endswith("_hosts") else None
                if sysname.startswith("shipped_"):
                    spec = os.path.join(ROOT, "config", "mnist_hosts",
                                        sysname[len("shipped_"):] + ".textproto")
                    r = atrain_run(args, sysname, [], seed, straggle, out, cluster, spec)
                elif sysname == "ddp":
                    r = ddp_run(args, seed, straggle, out)
                elif algo == "allreduce":
                    r = atrain_run(args, sysname, [f"algorithm.allreduce.step_size={args.allreduce_step}"],
                                   seed, straggle, out, where)
                elif algo != "rfast":  # any other algorithm, at its --step (else its defaults)
                    sets = [f"algorithm.{algo}.step_size={args.step[algo]}"] if algo in args.step else []
                    r = atrain_run(args, sysname, sets + args.alg_set.get(algo, []), seed, straggle,
                                   out, where)
                else:
                    sets = [f"algorithm.rfast.step_size={args.rfast_step}"] if args.rfast_step else []
                    if args.rfast_phi_min:
                        sets.append(f"algorithm.rfast.phi_min={args.rfast_phi_min}")
                    sets += args.rfast_set
                    r = atrain_run(args, sysname, sets, seed, straggle, out, where)
                results[cond][sysname].append(r)
                ttt = r["time_to_target"]
                print(f"[{time.time() - began:6.0f} s] seed {seed} {cond:>12} {sysname:>9}: "
                      f"time to {args.target} = {'not reached' if ttt is None else f'{ttt:.2f} s'}, "
                      f"gradients {r['gradients']}, final acc {r['final_accuracy']:.4f}",
                      flush=True)
    print(f"total wall time {time.time() - began:.0f} s")


def report_table(args, systems, conditions, results):
    lines = [f"| condition | system | time to {args.target} (s) | reached | gradients to target "
             "| gradients / s | / ddp |", "|---|---|---:|---:|---:|---:|---:|"]
    for cond, _ in conditions:
        row = results[cond]
        means = {s: statistics.mean([r["time_to_target"] for r in row[s]
                                     if r["time_to_target"] is not None] or [float("nan")])
                 for s in systems}
        for s in systems:
            ts = [r["time_to_target"] for r in row[s] if r["time_to_target"] is not None]
            reached = [r for r in row[s] if r["time_to_target"] is not None]
            grads = statistics.mean([r["gradients_to_target"] for r in reached] or [float("nan")])
            rate = statistics.mean([r["gradients_to_target"] / r["time_to_target"]
                                    for r in reached] or [float("nan")])
            ratio = f"{means[s] / means['ddp']:.2f}" if "ddp" in systems else "–"
            name = {"ddp": "ddp (gloo)"}.get(s, "atrain " + s.replace("_hosts", f" ({args.nodes} processes)").replace("shipped_", "shipped "))
            lines.append(f"| {cond} | {name} | {fmt(ts)} | {len(ts)}/{len(row[s])} | "
                         f"{grads:.0f} | {rate:.0f} | {ratio} |")
    slow = [f"{s}: {statistics.mean(t) / statistics.mean(u):.2f}x" for s in systems
            for u, t in [([r["time_to_target"] for r in results[conditions[0][0]][s]
                           if r["time_to_target"] is not None],
                          [r["time_to_target"] for r in results[conditions[1][0]][s]
                           if r["time_to_target"] is not None])] if u and t]
    lines.append("")
    lines.append(f"time to target with the straggler / without: {', '.join(slow)}")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"args": vars(args), "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

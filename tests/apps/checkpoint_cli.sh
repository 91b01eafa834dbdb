#!/bin/sh
# `atrain run --resume` end to end (virtual clock): a run checkpointed at
# t=1 and run to t=2 uninterrupted, the same spec stopped right after the
# checkpoint, and that checkpoint resumed to t=2 must print the same trace
# hash and final figures; a checkpoint of another node count and a
# truncated one are refused with exit 2 before anything runs.
# usage: checkpoint_cli.sh ATRAIN SCRATCH_DIR   (from the source root)
A=$1
D=$2
rm -rf "$D" && mkdir -p "$D" || exit 1
S=config/quickstart.textproto
run() { "$A" run $S --no-progress --set dataset.max_train_samples=4000 \
          --set stop.stop_at_target=false "$@"; }
at1="checkpoint.at_seconds=[1]"
run --set stop.time_seconds=2 --set $at1 --set checkpoint.file="$D/full.ckpt" > "$D/full.txt" || exit 1
run --set stop.time_seconds=1.0001 --set $at1 --set checkpoint.file="$D/part.ckpt" > "$D/part.txt" || exit 1
run --set stop.time_seconds=2 --set $at1 --set checkpoint.file="$D/again.ckpt" \
    --resume "$D/part.ckpt" > "$D/resumed.txt" || exit 1
cat "$D/resumed.txt"
# same_end FULL RESUMED: the two outputs' trace hash and final figures agree.
same_end() {
  for line in "trace hash" "final " "gradients "; do
    full=$(grep "^$line" "$1")
    resumed=$(grep "^$line" "$2")
    if [ -z "$full" ] || [ "$full" != "$resumed" ]; then
      echo "FAIL: '$full' (uninterrupted $1) != '$resumed' (resumed)"
      exit 1
    fi
  done
}
same_end "$D/full.txt" "$D/resumed.txt"
grep -q "^resumed from .*part.ckpt (taken at t=1" "$D/resumed.txt" || { echo "FAIL: no resume note"; exit 1; }
run --set nodes=4 --set stop.time_seconds=2 --resume "$D/part.ckpt" > "$D/nodes.txt" 2>&1
code=$?
if [ $code != 2 ] || ! grep -q "holds 8 nodes; the spec runs 4" "$D/nodes.txt" || grep -q "trace hash" "$D/nodes.txt"; then
  echo "FAIL: other node count: exit $code"; cat "$D/nodes.txt"; exit 1
fi
head -c 200 "$D/part.ckpt" > "$D/truncated.ckpt"
run --set stop.time_seconds=2 --resume "$D/truncated.ckpt" > "$D/truncated.txt" 2>&1
code=$?
if [ $code != 2 ] || ! grep -q "truncated" "$D/truncated.txt" || grep -q "trace hash" "$D/truncated.txt"; then
  echo "FAIL: truncated checkpoint: exit $code"; cat "$D/truncated.txt"; exit 1
fi
# The parameter server (an extra actor at the barrier) through the binary too.
S=config/algorithms/async_ps.textproto
run --set stop.time_seconds=1 --set "checkpoint.at_seconds=[0.5]" --set checkpoint.file="$D/ps_full.ckpt" > "$D/ps_full.txt" || exit 1
run --set stop.time_seconds=0.5001 --set "checkpoint.at_seconds=[0.5]" --set checkpoint.file="$D/ps_part.ckpt" > /dev/null || exit 1
run --set stop.time_seconds=1 --set "checkpoint.at_seconds=[0.5]" --set checkpoint.file="$D/ps_again.ckpt" \
    --resume "$D/ps_part.ckpt" > "$D/ps_resumed.txt" || exit 1
same_end "$D/ps_full.txt" "$D/ps_resumed.txt"
echo "checkpoint_cli OK: $(grep '^trace hash' "$D/full.txt"); async_ps $(grep '^trace hash' "$D/ps_full.txt")"

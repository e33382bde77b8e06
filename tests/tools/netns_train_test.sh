#!/usr/bin/env bash
# One `ember train` job across two "hosts" (network namespaces, see netns_two_hosts.sh): node 0
# (rank 0, the TCPStore and Gloo's first peer) in host A at 10.77.0.1, node 1 (rank 1) in host
# B; Gloo traffic crosses the veth pair. Both write to the same (shared) output directory; only
# rank 0 writes checkpoints.
#
#   netns_train_test.sh EMBER NETNS_TWO_HOSTS_SH DATASET_ROOT
#
# Exits 0 on success, 1 on failure, 77 (skip) where namespaces cannot be made.
set -u
ember="${1:?usage: netns_train_test.sh EMBER NETNS_TWO_HOSTS_SH DATASET_ROOT}"
two_hosts="${2:?usage: netns_train_test.sh EMBER NETNS_TWO_HOSTS_SH DATASET_ROOT}"
data="${3:?usage: netns_train_test.sh EMBER NETNS_TWO_HOSTS_SH DATASET_ROOT}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

launch="'$ember' launch --nproc_per_node 1 --nnodes 2 --master_addr 10.77.0.1 --master_port 29566 --kill_timeout 3"
train="'$ember' train --dataset.root='$data' --output_dir='$tmp/run' --device=cpu --steps=4 --batch_size=2 \
  --policy.horizon=10 --dataset.image_size=32 --num_workers=1 --log_freq=1 --save_freq=2 --dataset.episodes=[0] \
  --dist.timeout_s=30"
out="$(CMD_A="$launch --node_rank 0 -- $train" CMD_B="$launch --node_rank 1 -- $train" NETNS_TIMEOUT=50 "$two_hosts" 2>&1)"
status=$?
echo "$out"
((status == 77)) && exit 77
if grep -q "built without video support" <<<"$out"; then
  echo "SKIP: ember was built without FFmpeg: the fixture's videos cannot be decoded"
  exit 77
fi
if ((status != 0)); then
  echo "FAIL: the two-host training job exited with status $status"
  exit 1
fi
for line in "[A] [rank 0] ember train: torchrun: rank 0 of 2 (local 0 of 1, node 0 of 2), master 10.77.0.1:29566, Gloo" \
            "[A] [rank 0] trained to step 4; checkpoint $tmp/run/checkpoints/000004"; do
  if ! grep -qxF -- "$line" <<<"$out"; then
    echo "FAIL: missing line: $line"
    exit 1
  fi
done
if (($(wc -l <"$tmp/run/metrics.jsonl") != 4)); then
  echo "FAIL: metrics.jsonl should have 4 lines"
  exit 1
fi
echo "PASS: one training job over two namespaces (2 ranks, Gloo across the veth pair)"

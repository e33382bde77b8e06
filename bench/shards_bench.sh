#!/usr/bin/env bash
# The loader from training shards against the same frames as PNG (and video), locally and over
# loopback HTTP (nginx), JPEG quality against bytes, error and decode time, and (TRAIN=1) the data
# wait of `ember train` on shards. One run:
#   bash bench/shards_bench.sh BUILD_DIR OUT.jsonl [WORKERS]   (WORKERS default 1,2)
# Environment:
#   SOURCE=sim          the sim suite's demonstrations as PNG and as video (`ember sim collect`:
#                       MuJoCo rendering, FFmpeg for video); SOURCE=libero_like: the LIBERO-shaped
#                       PNG dataset of libero_like_tool (no rendering, no FFmpeg: GPU nodes)
#   PRESETS=small       the policies whose shapes the loader builds (comma list, e.g. small,pi05)
#   BATCH=32            samples a step
#   NGINX_BIN=/usr/sbin/nginx   the server for the loopback figure (a GPU node: the bundle's)
#   TRAIN=1             then `ember train` pi05 at batch 16 and small at batch 128 on CUDA from the
#                       shards: data_wait_frac per log window (train_data_wait lines of OUT.jsonl;
#                       needs a GPU); TRAIN_PRESETS=pi05,small chooses which
#   DECODE=1            also `ember bench jpeg_decode` (libjpeg-turbo at 1/8/16/24 threads against
#                       nvJPEG, batches of BATCH 224 px frames; EMBER_NVJPEG names libnvjpeg)
#   SKIP_PNG=1          the loader on shards (and HTTP) only, not on the PNG dataset
# Cost: ~4 min on the 2-core dev machine with SOURCE=sim (collecting twice is most of it); on the
# H200 host with SOURCE=libero_like, PRESETS=small,pi05, WORKERS=8,16, TRAIN=1: see
# bench/results/shards_h200_2026-12-01.md.
set -euo pipefail
build="${1:?usage: shards_bench.sh BUILD_DIR OUT.jsonl [WORKERS]}"
out="${2:?usage: shards_bench.sh BUILD_DIR OUT.jsonl [WORKERS]}"
workers="${3:-1,2}"
source_kind="${SOURCE:-sim}"
batch="${BATCH:-32}"
ember="$build/ember"
nginx="${NGINX_BIN:-/usr/sbin/nginx}"  # (not NGINX: nginx reads that variable itself)
work="$(mktemp -d)"
trap 'kill "${nginx_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
: >"$out"
note() { echo "[shards_bench] $*" >&2; }

# the same frames as PNG images (and as video, from the sim suite: one demonstration per task)
roots=("$work/image")
if [[ "$source_kind" == sim ]]; then
  for dtype in image video; do
    note "collecting $dtype dataset"
    "$ember" sim collect --output_dir "$work/$dtype" --suite ember10 --episodes_per_task 3 --image_size 224 \
      --camera_dtype "$dtype" --seed 7 >&2
  done
  roots+=("$work/video")
else
  note "writing the LIBERO-shaped PNG dataset (no video: no FFmpeg assumed)"
  "$build/libero_like_tool" "$work/image" --episodes "${EPISODES:-40}" --frames 50 --image 256 >&2
fi
note "packing shards"
"$ember" data pack "$work/image" "$work/shards" --image_size 224 --shard_mb 16 >&2
"$ember" data check "$work/shards" >&2
roots+=("$work/shards")
du -sb "$work/image/data" "$work/shards/data" | sed 's/^/[shards_bench] bytes: /' >&2

"$ember" bench jpeg "$work/image" --image_size 224 --qualities 75,85,90,95,98 --frames 64 | tee -a "$out"
if [[ "${DECODE:-0}" == 1 ]]; then
  note "JPEG decoding: libjpeg-turbo against nvJPEG, batches of $batch"
  "$ember" bench jpeg_decode "$work/image" --image_size 224 --batch_size "$batch" --threads 1,8,16,24 | tee -a "$out" ||
    note "jpeg_decode failed (above)"
fi
[[ "${SKIP_PNG:-0}" == 1 ]] && roots=("$work/shards")
IFS=, read -r -a presets <<<"${PRESETS:-small}"
for preset in "${presets[@]}"; do
  for root in "${roots[@]}"; do
    note "loader $preset from $root (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
    "$ember" bench loader "$root" --preset "$preset" --batch_size "$batch" --workers "$workers" --warmup 2 --steps 12 | tee -a "$out"
  done
  if [[ "${DECODE:-0}" == 1 ]]; then
    note "loader $preset from the shards with nvJPEG"
    "$ember" bench loader "$work/shards" --preset "$preset" --batch_size "$batch" --workers "$workers" --warmup 2 --steps 12 \
      --jpeg_decoder nvjpeg | tee -a "$out" || note "the loader with nvJPEG failed (above)"
  fi
done

if [[ -x "$nginx" ]]; then
  port=$((20000 + RANDOM % 20000))
  mkdir -p "$work/nginx/logs"
  cat >"$work/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 64; }
http { access_log off; client_body_temp_path $work/nginx/body; proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fcgi; uwsgi_temp_path $work/nginx/uwsgi; scgi_temp_path $work/nginx/scgi;
  server { listen 127.0.0.1:$port; root $work/shards; } }
CONF
  "$nginx" -e "$work/nginx/logs/stderr.log" -p "$work/nginx" -c "$work/nginx/nginx.conf" &
  nginx_pid=$!
  sleep 1
  for preset in "${presets[@]}"; do
    note "loader $preset from http://127.0.0.1:$port (fresh cache; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
    rm -rf "$work/cache"
    "$ember" bench loader "http://127.0.0.1:$port" --cache_dir "$work/cache" --preset "$preset" --batch_size "$batch" \
      --workers "$workers" --warmup 2 --steps 12 | tee -a "$out"
  done
else
  note "nginx not found at $nginx: the loopback HTTP figure is skipped"
fi

if [[ "${TRAIN:-0}" == 1 ]]; then
  IFS=, read -r -a train_presets <<<"${TRAIN_PRESETS:-pi05,small}"
  for preset in "${train_presets[@]}"; do
    tb=16
    [[ "$preset" == small ]] && tb=128
    note "ember train $preset, batch $tb, from the shards"
    "$ember" train --dataset.root="$work/shards" --output_dir="$work/run_$preset" --policy.preset="$preset" --device=cuda \
      --batch_size=$tb --steps="${TRAIN_STEPS:-40}" --log_freq=10 --save_checkpoint=false --policy.param_dtype=bf16 >&2
    sed "s/^{/{\"bench\":\"train_data_wait\",\"preset\":\"$preset\",\"batch_size\":$tb,/" "$work/run_$preset/metrics.jsonl" | tee -a "$out"
  done
fi

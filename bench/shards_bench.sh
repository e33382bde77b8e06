#!/usr/bin/env bash
# The loader from training shards against the same frames as PNG and video, locally and over
# loopback HTTP (nginx), and JPEG quality against bytes, error and decode time. One run:
#   bash bench/shards_bench.sh BUILD_DIR OUT.jsonl [WORKERS]   (WORKERS default 1,2)
# Cost on the 2-core dev machine: ~4 min (collecting the sim dataset twice is most of it).
set -euo pipefail
build="${1:?usage: shards_bench.sh BUILD_DIR OUT.jsonl [WORKERS]}"
out="${2:?usage: shards_bench.sh BUILD_DIR OUT.jsonl [WORKERS]}"
workers="${3:-1,2}"
ember="$build/ember"
work="$(mktemp -d)"
trap 'kill "${nginx_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
: >"$out"
note() { echo "[shards_bench] $*" >&2; }

# the same demonstrations as PNG images and as video (one per task of the easy suite)
for dtype in image video; do
  note "collecting $dtype dataset"
  "$ember" sim collect --output_dir "$work/$dtype" --suite ember10 --episodes_per_task 3 --image_size 224 \
    --camera_dtype "$dtype" --seed 7 >&2
done
note "packing shards"
"$ember" data pack "$work/image" "$work/shards" --image_size 224 --shard_mb 16 >&2
"$ember" data check "$work/shards" >&2
du -sb "$work/image/data" "$work/video" "$work/shards/data" | sed 's/^/[shards_bench] bytes: /' >&2

"$ember" bench jpeg "$work/image" --image_size 224 --qualities 75,85,90,95,98 --frames 64 | tee -a "$out"
for root in "$work/image" "$work/video" "$work/shards"; do
  note "loader from $root (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$ember" bench loader "$root" --preset small --batch_size 32 --workers "$workers" --warmup 2 --steps 12 | tee -a "$out"
done

if command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; then
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
  /usr/sbin/nginx -e "$work/nginx/logs/stderr.log" -p "$work/nginx" -c "$work/nginx/nginx.conf" &
  nginx_pid=$!
  sleep 1
  note "loader from http://127.0.0.1:$port (fresh cache; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  "$ember" bench loader "http://127.0.0.1:$port" --cache_dir "$work/cache" --preset small --batch_size 32 \
    --workers "$workers" --warmup 2 --steps 12 | tee -a "$out"
else
  note "nginx not installed: the loopback HTTP figure is skipped"
fi

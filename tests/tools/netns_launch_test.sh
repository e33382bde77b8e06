#!/usr/bin/env bash
# A two-node `ember launch` across two "hosts" (network namespaces, see netns_two_hosts.sh):
# node 0 in host A and node 1 in host B, two ranks each, master 10.77.0.1. Every rank prints
# its environment; rank 0 listens on MASTER_ADDR:MASTER_PORT and node 1's ranks connect to it
# from the other host, which proves the multi-node variables lead somewhere (no c10d yet).
#
#   netns_launch_test.sh EMBER NETNS_TWO_HOSTS_SH
#
# Exits 0 on success, 1 on a mismatch, 77 (skip) where namespaces cannot be made or python3
# is missing.
set -u

if [[ "${1:-}" == --rank ]]; then
  # one rank of the job, run by `ember launch`
  echo "RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK/$LOCAL_WORLD_SIZE GROUP_RANK=$GROUP_RANK" \
    "MASTER=$MASTER_ADDR:$MASTER_PORT"
  if [[ $RANK == 0 ]]; then
    exec python3 - <<'PY'
import os, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])))
s.listen(8)
s.settimeout(20)
peers = int(os.environ["WORLD_SIZE"]) - int(os.environ["LOCAL_WORLD_SIZE"])
for _ in range(peers):
    c, addr = s.accept()
    print(f"master got '{c.makefile().readline().strip()}' from {addr[0]}", flush=True)
    c.close()
PY
  elif [[ $GROUP_RANK != 0 ]]; then
    exec python3 - <<'PY'
import os, socket, time
deadline = time.time() + 20
while True:
    try:
        c = socket.create_connection((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])), timeout=2)
        break
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.05)
c.sendall(f"hello from rank {os.environ['RANK']}\n".encode())
c.close()
PY
  fi
  exit 0
fi

ember="${1:?usage: netns_launch_test.sh EMBER NETNS_TWO_HOSTS_SH}"
two_hosts="${2:?usage: netns_launch_test.sh EMBER NETNS_TWO_HOSTS_SH}"
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is missing"; exit 77; }

launch="'$ember' launch --nproc_per_node 2 --nnodes 2 --master_addr 10.77.0.1 --master_port 29555 --kill_timeout 3"
out="$(CMD_A="$launch --node_rank 0 -- '$self' --rank" CMD_B="$launch --node_rank 1 -- '$self' --rank" \
       NETNS_TIMEOUT=40 "$two_hosts" 2>&1)"
status=$?
echo "$out"
((status == 77)) && exit 77
if ((status != 0)); then
  echo "FAIL: the two-host job exited with status $status"
  exit 1
fi

expected=(
  "[A] [rank 0] RANK=0 WORLD_SIZE=4 LOCAL_RANK=0/2 GROUP_RANK=0 MASTER=10.77.0.1:29555"
  "[A] [rank 1] RANK=1 WORLD_SIZE=4 LOCAL_RANK=1/2 GROUP_RANK=0 MASTER=10.77.0.1:29555"
  "[B] [rank 2] RANK=2 WORLD_SIZE=4 LOCAL_RANK=0/2 GROUP_RANK=1 MASTER=10.77.0.1:29555"
  "[B] [rank 3] RANK=3 WORLD_SIZE=4 LOCAL_RANK=1/2 GROUP_RANK=1 MASTER=10.77.0.1:29555"
  "[A] [rank 0] master got 'hello from rank 2' from 10.77.0.2"
  "[A] [rank 0] master got 'hello from rank 3' from 10.77.0.2"
)
for line in "${expected[@]}"; do
  if ! grep -qxF -- "$line" <<<"$out"; then
    echo "FAIL: missing line: $line"
    exit 1
  fi
done
echo "PASS: two nodes in two namespaces, 4 ranks, node 1 reached the master at 10.77.0.1"

#!/usr/bin/env bash
# Two "hosts" on one machine: network namespaces A and B joined by a veth pair, with
# 10.77.0.1/24 in A and 10.77.0.2/24 in B (the addresses exist only inside them; loopback is
# up in both). Runs CMD_A in A and CMD_B in B (each through `bash -c`, with HOSTA and HOSTB
# exported), waits for both, and removes the namespaces on every exit path.
#
#   CMD_A='...' CMD_B='...' [NETNS_TIMEOUT=60] tests/tools/netns_two_hosts.sh
#
# Output of each command is prefixed with "[A] " / "[B] ". Exit status: 0 when both succeed,
# else A's status if it failed, else B's (124 when NETNS_TIMEOUT seconds ran out). Exits 77
# after printing "SKIP: <reason>" where namespaces cannot be made (not root, no `ip`, no
# permission), so that CTest reports a skip (SKIP_RETURN_CODE 77).
set -u

skip() {
  echo "SKIP: $*"
  exit 77
}

: "${CMD_A:?CMD_A: the command for host A}"
: "${CMD_B:?CMD_B: the command for host B}"
timeout_s="${NETNS_TIMEOUT:-60}"
export HOSTA=10.77.0.1 HOSTB=10.77.0.2

command -v ip >/dev/null 2>&1 || skip "no 'ip' command (install iproute2)"
[[ $(id -u) -eq 0 ]] || skip "creating network namespaces needs root"

# names unique to this run; interface names stay under 16 characters
ns_a="ember_a_$$"
ns_b="ember_b_$$"
veth_a="emva$$"
veth_b="emvb$$"
pid_a=""
pid_b=""

# PIDs of the processes inside a namespace ("" when it is gone)
ns_pids() { ip netns pids "$1" 2>/dev/null; }

cleanup() {
  local ns p i
  # SIGTERM to everything inside both hosts, a moment to finish, then SIGKILL
  for ns in "$ns_a" "$ns_b"; do
    for p in $(ns_pids "$ns"); do kill -TERM "$p" 2>/dev/null; done
  done
  for ((i = 0; i < 20; i++)); do
    [[ -z "$(ns_pids "$ns_a")$(ns_pids "$ns_b")" ]] && break
    sleep 0.1
  done
  for ns in "$ns_a" "$ns_b"; do
    for p in $(ns_pids "$ns"); do kill -KILL "$p" 2>/dev/null; done
  done
  wait 2>/dev/null
  for ns in "$ns_a" "$ns_b"; do ip netns del "$ns" 2>/dev/null; done
  ip link del "$veth_a" 2>/dev/null  # only left when moving it into A failed
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

err=$(ip netns add "$ns_a" 2>&1) || skip "cannot create a network namespace: $err"
err=$(ip netns add "$ns_b" 2>&1) || skip "cannot create a network namespace: $err"
err=$(ip link add "$veth_a" type veth peer name "$veth_b" 2>&1) || skip "cannot create a veth pair: $err"
setup() {
  ip link set "$veth_a" netns "$ns_a" &&
    ip link set "$veth_b" netns "$ns_b" &&
    ip -n "$ns_a" addr add "$HOSTA/24" dev "$veth_a" &&
    ip -n "$ns_b" addr add "$HOSTB/24" dev "$veth_b" &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
    ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up
}
err=$(setup 2>&1) || skip "cannot configure the namespaces: $err"

# runs a command in a namespace with its output prefixed; returns the command's status
run_host() {
  ip netns exec "$1" timeout --kill-after=5 "$timeout_s" bash -c "$2" 2>&1 | sed -u "s/^/[$3] /"
  return "${PIPESTATUS[0]}"
}

# the two hosts run at once; each is bounded in time
run_host "$ns_a" "$CMD_A" A &
pid_a=$!
run_host "$ns_b" "$CMD_B" B &
pid_b=$!
wait "$pid_a"
status_a=$?
wait "$pid_b"
status_b=$?
if ((status_a != 0)); then
  echo "netns_two_hosts: host A's command exited with status $status_a" >&2
  exit "$status_a"
fi
if ((status_b != 0)); then
  echo "netns_two_hosts: host B's command exited with status $status_b" >&2
  exit "$status_b"
fi
exit 0

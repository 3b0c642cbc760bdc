#!/usr/bin/env bash
# Proves the two Python ends against each other with nothing in between: Telethon's MTProxy
# client talks straight to mtproxy_backend.py, once with a plain secret (intermediate) and once
# with a dd secret (padded intermediate), plus three connections the backend must refuse.
# One connection runs Telethon with its own pure-Python AES (slow), the others use OpenSSL's.
# Exit status 0 only if every check passed. CONNECTIONS sets the parallel connections per mode.
set -euo pipefail
cd "$(dirname "$0")"
started=$SECONDS

../../scripts/mtproxy-venv
python=../../.venv/bin/python
connections=${CONNECTIONS:-3}
work=$(mktemp -d)
backend_pids=()
client_pids=()
client_names=()

# Stops whatever this script started that still runs, then removes the scratch directory.
stop_all() {
    local pid
    for pid in "${client_pids[@]}" "${backend_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap stop_all EXIT

# A fresh 16-byte secret as hex. Telethon strips a leading dd/ee, so avoid those.
new_secret() {
    "$python" -c '
import secrets
while (s := secrets.token_hex(16))[:2] in ("dd", "ee"):
    pass
print(s)'
}

# start_backend NAME SECRET: starts a backend on a free port and stores the port in $port.
start_backend() {
    local name=$1
    : >"$work/$name.out"  # exists before the poll below, however the fork is scheduled
    MTPROXY_SECRET=$2 "$python" mtproxy_backend.py --port 0 >"$work/$name.out" 2>"$work/$name.log" &
    backend_pids+=($!)
    local attempt
    for attempt in $(seq 100); do
        port=$(awk '$1 == "PORT" { print $2; exit }' "$work/$name.out")
        [[ -n $port ]] && return 0
        sleep 0.1
    done
    echo "run_direct: backend $name did not report its port" >&2
    cat "$work/$name.log" >&2
    exit 1
}

# client NAME SECRET PORT [ARGS...]: runs the Telethon client in the background.
client() {
    local name=$1 secret=$2 port=$3
    shift 3
    MTPROXY_SECRET=$secret "$python" telethon_echo_client.py --port "$port" --timeout 45 "$@" \
        >"$work/client-$name.out" 2>&1 &
    client_pids+=($!)
    client_names+=("$name")
}

plain=$(new_secret)
padded=dd$(new_secret)
start_backend plain "$plain"
plain_port=$port
start_backend padded "$padded"
padded_port=$port

client plain "$plain" "$plain_port" --connections "$connections"
client padded "$padded" "$padded_port" --connections "$connections" --seed 2
client padded-stock-telethon "$padded" "$padded_port" --connections 1 --seed 3 --aes pyaes
client wrong-secret "$(new_secret)" "$plain_port" --connections 1 --expect-rejection
client padded-to-plain "dd$plain" "$plain_port" --connections 1 --expect-rejection
client plain-to-padded "${padded#dd}" "$padded_port" --connections 1 --expect-rejection

failed=0
for i in "${!client_pids[@]}"; do
    if wait "${client_pids[$i]}"; then result=ok; else result=FAILED; failed=1; fi
    echo "== ${client_names[$i]}: $result"
    cat "$work/client-${client_names[$i]}.out"
done

if ((failed)); then
    for name in plain padded; do
        echo "== backend $name log"
        cat "$work/$name.log"
    done
    echo "run_direct: FAILED after $((SECONDS - started)) s"
    exit 1
fi
echo "run_direct: all passed in $((SECONDS - started)) s"

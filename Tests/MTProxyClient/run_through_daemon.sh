#!/usr/bin/env bash
# The whole chain, end to end, with real parts only:
#
#   Telethon (telethon_echo_client.py) → webproxyd listener → webproxyd-testrelay (TLS) →
#   mtproxy_backend.py
#
# One run per (secret kind × carrier): plain+https, dd+websocket, plain+websocket-lanes and
# dd+https-lanes, all four at once, each with its own secret, backend, relay and daemon
# (configured through a temporary file with `secret-file`, so no secret is in any argv). A run
# passes when every Telethon packet (16 B to 512 KiB) came back intact, the daemon's session
# used the run's carrier, was never lost and was deleted at shutdown, and the daemon's log holds
# neither the secret nor the capability. One more check: a client with the wrong secret is
# refused by the backend, and the close reaches it through the chain. Ends with
# `N passed, M failed` (checks); exit 0 only if all passed (about 10 s).
#
# Builds nothing: expects webproxyd and webproxyd-testrelay in .build/debug (`swift build`), or
# in the directory given with --build-dir. Creates the Python venv with scripts/mtproxy-venv.
# CONNECTIONS sets the parallel Telethon connections per run (default 2); KEEP_WORK=1 keeps the
# logs.
set -euo pipefail

# Options first: a relative --build-dir is relative to the caller's directory.
build_dir=
while (($#)); do
    case $1 in
        --build-dir)
            [[ $# -ge 2 ]] || { echo "run_through_daemon: --build-dir needs a value" >&2; exit 64; }
            build_dir=$(cd "$2" && pwd)
            shift 2
            ;;
        *)
            echo "usage: run_through_daemon.sh [--build-dir DIR]" >&2
            exit 64
            ;;
    esac
done
cd "$(dirname "$0")"
here=$PWD
root=$(cd ../.. && pwd)
started=$SECONDS
build_dir=${build_dir:-$root/.build/debug}
daemon=$build_dir/webproxyd
relay=$build_dir/webproxyd-testrelay
for binary in "$daemon" "$relay"; do
    [[ -x $binary ]] || {
        echo "run_through_daemon: $binary is missing; run 'swift build' first" >&2
        exit 1
    }
done

"$root/scripts/mtproxy-venv"
python=$root/.venv/bin/python
connections=${CONNECTIONS:-2}
host=proxy.example.com
work=$(mktemp -d)
chmod 700 "$work"
children=()

# Sends SIGTERM to PID and waits for it at most 5 s, then SIGKILL.
stop_child() {
    local pid=$1 tick
    kill -TERM "$pid" 2>/dev/null || return 0
    for tick in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Stops every child still running, newest first, then removes the scratch directory.
stop_all() {
    local i
    for ((i = ${#children[@]} - 1; i >= 0; i--)); do stop_child "${children[$i]}"; done
    if [[ -n ${KEEP_WORK:-} ]]; then
        echo "run_through_daemon: logs kept in $work"
    else
        rm -rf "$work"
    fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# A fresh 16-byte secret as hex. Telethon strips a leading dd/ee, so avoid those.
new_secret() {
    "$python" -c '
import secrets
while (s := secrets.token_hex(16))[:2] in ("dd", "ee"):
    pass
print(s)'
}

# wait_port_line FILE WHAT LOG: waits up to 10 s for `PORT <n>` in FILE and stores n in $port.
wait_port_line() {
    local file=$1 what=$2 log=$3 tick
    for tick in $(seq 100); do
        port=$(awk '$1 == "PORT" { print $2; exit }' "$file")
        [[ -n $port ]] && return 0
        sleep 0.1
    done
    echo "run_through_daemon: $what did not report its port" >&2
    cat "$log" >&2
    return 1
}

# A free loopback TCP port (bound and released; the daemon takes it right after).
free_port() {
    "$python" -c '
import socket
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])'
}

# wait_listening PORT PID: waits up to 15 s until something listens on 127.0.0.1:PORT (read
# from /proc, so no connection reaches the daemon), failing early if PID has exited.
wait_listening() {
    local port=$1 pid=$2 tick
    for tick in $(seq 150); do
        if "$python" - "$port" <<'EOF'
import sys
wanted = "0100007F:%04X" % int(sys.argv[1])
with open("/proc/net/tcp") as table:
    rows = [line.split() for line in table.readlines()[1:]]
sys.exit(0 if any(row[1] == wanted and row[3] == "0A" for row in rows) else 1)
EOF
        then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# start_run NAME SECRET CARRIER: starts the backend, the test relay and the daemon of one run;
# leaves the daemon's listening port in $dir/listen-port and the three pids in $dir/pids.
start_run() {
    local name=$1 secret=$2 carrier=$3
    local dir=$work/$name
    mkdir -m 700 "$dir"
    (umask 077 && printf '%s\n' "$secret" >"$dir/secret")

    : >"$dir/backend.out"
    MTPROXY_SECRET=$secret "$python" "$here/mtproxy_backend.py" --port 0 \
        >"$dir/backend.out" 2>"$dir/backend.log" &
    children+=($!)
    wait_port_line "$dir/backend.out" "$name backend" "$dir/backend.log"
    local backend_port=$port backend_pid=${children[-1]}

    : >"$dir/relay.out"
    "$relay" --listen 127.0.0.1:0 --backend "127.0.0.1:$backend_port" \
        --secret-file "$dir/secret" --carrier "$carrier" --host "$host" --state-dir "$dir/relay" \
        >"$dir/relay.out" 2>"$dir/relay.log" &
    children+=($!)
    wait_port_line "$dir/relay.out" "$name test relay" "$dir/relay.log"
    local relay_port=$port relay_pid=${children[-1]}

    local listen_port
    listen_port=$(free_port)
    cat >"$dir/webproxyd.conf" <<EOF
[daemon]
log-level = debug

[relay $name]
host = $host
secret-file = $dir/secret
listen = 127.0.0.1:$listen_port
carrier = $carrier
ca-file = $dir/relay/ca.pem
connect-to = 127.0.0.1:$relay_port
EOF
    "$daemon" run --config "$dir/webproxyd.conf" >"$dir/daemon.log" 2>&1 &
    local daemon_pid=$!
    children+=($daemon_pid)
    if ! wait_listening "$listen_port" "$daemon_pid"; then
        echo "run_through_daemon: $name: webproxyd did not listen on $listen_port" >&2
        cat "$dir/daemon.log" >&2
        return 1
    fi
    echo "$listen_port" >"$dir/listen-port"
    echo "$daemon_pid $relay_pid $backend_pid" >"$dir/pids"
}

# stop_run NAME: stops the daemon first (so its DELETE reaches the relay), then relay, backend.
stop_run() {
    local pid
    for pid in $(cat "$work/$1/pids"); do stop_child "$pid"; done
}

# leaks NAME SECRET: prints what of the secret or its capability the daemon's log holds.
# The capability is base64url(HMAC-SHA256(secret, "tdesktop-web-proxy-bridge-v1\n" + host)).
leaks() {
    local name=$1 secret=$2
    "$python" - "$work/$name/daemon.log" "$host" <<EOF
import base64, hashlib, hmac, sys
secret = bytes.fromhex("$secret")
mac = hmac.new(secret, b"tdesktop-web-proxy-bridge-v1\n" + sys.argv[2].encode(), hashlib.sha256)
capability = base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()
forms = {
    "the secret (hex)": secret.hex(),
    "the secret's last 16 bytes (hex)": secret[-16:].hex(),
    "the secret (base64)": base64.b64encode(secret).rstrip(b"=").decode(),
    "the capability": capability,
    "the capability (standard base64)": base64.b64encode(mac.digest()).rstrip(b"=").decode(),
}
log = open(sys.argv[1], encoding="utf-8", errors="replace").read().lower()
for what, text in forms.items():
    if text.lower() in log:
        print(what)
EOF
}

# name secret carrier, one line per run.
runs=(
    "plain-https $(new_secret) https"
    "dd-websocket dd$(new_secret) websocket"
    "plain-websocket-lanes $(new_secret) websocket-lanes"
    "dd-https-lanes dd$(new_secret) https-lanes"
)

client_pids=()
names=()
secrets=()
carriers=()
seed=1
for run in "${runs[@]}"; do
    read -r name secret carrier <<<"$run"
    names+=("$name")
    secrets+=("$secret")
    carriers+=("$carrier")
    start_run "$name" "$secret" "$carrier"
    MTPROXY_SECRET=$secret timeout -k 5 60 "$python" "$here/telethon_echo_client.py" \
        --port "$(cat "$work/$name/listen-port")" --connections "$connections" --seed "$seed" \
        --timeout 50 >"$work/$name/client.out" 2>&1 &
    client_pids+=($!)
    children+=($!)
    seed=$((seed + 1))
done

# A client with the wrong secret: the backend refuses it, and that close must reach Telethon
# through the relay and the daemon.
MTPROXY_SECRET=$(new_secret) timeout -k 5 30 "$python" "$here/telethon_echo_client.py" \
    --port "$(cat "$work/${names[0]}/listen-port")" --connections 1 --expect-rejection \
    --timeout 20 >"$work/wrong-secret.out" 2>&1 &
rejection_pid=$!
children+=($rejection_pid)

passed=0
failed=0
# Bounded: `timeout` ends the client after 30 s.
if wait "$rejection_pid"; then
    passed=$((passed + 1))
    echo "== ${names[0]}, wrong secret: ok (refused)"
else
    failed=$((failed + 1))
    echo "== ${names[0]}, wrong secret: FAILED: the connection was not refused"
    cat "$work/wrong-secret.out"
fi
for i in "${!names[@]}"; do
    name=${names[$i]}
    problems=()
    # Bounded: `timeout` ends the client after 60 s.
    wait "${client_pids[$i]}" || problems+=("the Telethon client failed")
    stop_run "$name"
    log=$work/$name/daemon.log
    grep -q "passed, 0 failed" "$work/$name/client.out" || problems+=("not every packet matched")
    grep -q "event=session-up .*carrier=${carriers[$i]} " "$log" ||
        problems+=("no ${carriers[$i]} session came up")
    ! grep -q "event=session-lost" "$log" || problems+=("the daemon lost its session")
    grep -q "session deleted (2[0-9][0-9])" "$log" || problems+=("the daemon did not delete its session")
    leaked=$(leaks "$name" "${secrets[$i]}")
    [[ -z $leaked ]] || problems+=("the daemon's log holds ${leaked//$'\n'/, }")
    if ((${#problems[@]} == 0)); then
        passed=$((passed + 1))
        echo "== $name: ok ($(tail -n 1 "$work/$name/client.out"))"
    else
        failed=$((failed + 1))
        printf -v reasons '%s; ' "${problems[@]}"
        echo "== $name: FAILED: ${reasons%; }"
        echo "-- client"
        cat "$work/$name/client.out"
        for log in daemon relay backend; do
            echo "-- $log (last 40 lines)"
            tail -n 40 "$work/$name/$log.log"
        done
    fi
done

echo "run_through_daemon: $((SECONDS - started)) s"
echo "$passed passed, $failed failed"
((failed == 0))

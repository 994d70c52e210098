#!/usr/bin/env bash
# Starts a current nats-server, the release the embedded server is built from
# (the nats-server/v2 version in go.mod), so CI can run the external-NATS
# tests against it besides the machine's older server.
#
#   .ci/nats-current.sh start DIR   build it once (cached), start it in the
#                                   background with JetStream on a free
#                                   loopback port, store under DIR; print its
#                                   URL on stdout
#   .ci/nats-current.sh stop DIR    stop the server started with DIR
#   .ci/nats-current.sh version     print the release (without the "v")
#
# The binary is built from the Go module proxy and cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/ordersync/nats-server-<version>/.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 start DIR | stop DIR | version" >&2; exit 2; }

version=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)

case "${1:-}" in
version)
  echo "${version#v}"
  ;;
start)
  [ $# -eq 2 ] || usage
  dir=$2
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/ordersync/nats-server-$version"
  bin="$cache/nats-server"
  if [ ! -x "$bin" ]; then
    echo "building nats-server $version into $cache" >&2
    mkdir -p "$cache"
    GOBIN="$cache" GOFLAGS=-buildvcs=false go install "github.com/nats-io/nats-server/v2@$version" >&2
  fi
  mkdir -p "$dir/store" "$dir/ports"
  # -p -1 picks a free port; the server writes it to the ports file.
  "$bin" -a 127.0.0.1 -p -1 -js -sd "$dir/store" --ports_file_dir "$dir/ports" -l "$dir/nats-server.log" \
    </dev/null >/dev/null 2>&1 &
  pid=$!
  echo "$pid" >"$dir/nats-server.pid"
  for _ in $(seq 1 100); do
    ports="$dir/ports/nats-server_$pid.ports"
    if [ -s "$ports" ]; then
      url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nats"][0])' "$ports" 2>/dev/null || true)
      hostport=${url#nats://}
      if [ -n "$url" ] && (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null; then
        echo "$url"
        exit 0
      fi
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "nats-server $version exited at start:" >&2
      cat "$dir/nats-server.log" >&2 || true
      exit 1
    fi
    sleep 0.1
  done
  echo "nats-server $version not listening after 10s" >&2
  kill "$pid" 2>/dev/null || true
  exit 1
  ;;
stop)
  [ $# -eq 2 ] || usage
  pidfile="$2/nats-server.pid"
  [ -f "$pidfile" ] || exit 0
  pid=$(cat "$pidfile")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  ;;
*)
  usage
  ;;
esac

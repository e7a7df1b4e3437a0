#!/usr/bin/env bash
# cluster.sh: run a three-broker samsa cluster as local processes with one
# command. Each broker embeds one member of a three-member etcd cluster.
#
# Usage: scripts/cluster.sh [DIR]
#
# DIR (default ./samsa-cluster) holds broker i's data in DIR/broker-i and
# its log in DIR/broker-i.log. Running the script again on the same DIR
# restarts the same cluster with its data. Once all three brokers are
# ready it prints the bootstrap servers and waits. Ctrl-C (or SIGTERM)
# shuts the three brokers down cleanly; if one broker exits by itself, the
# others are shut down too and the script exits 1.
#
# Environment (all optional):
#   SAMSA_BIN   prebuilt samsa binary (default: go build ./cmd/samsa into DIR)
#   HOST        address the brokers listen on and advertise (127.0.0.1)
#   KAFKA_PORT  Kafka port of broker 1; brokers 2 and 3 use the next two (9092)
#   ADMIN_PORT  admin HTTP port of broker 1, likewise (9080)
#   PEER_PORT   etcd peer port of broker 1, likewise (2380)
#
# Needs bash 4.3 or later (wait -n).
set -euo pipefail

HOST=${HOST:-127.0.0.1}
KAFKA_PORT=${KAFKA_PORT:-9092}
ADMIN_PORT=${ADMIN_PORT:-9080}
PEER_PORT=${PEER_PORT:-2380}
READY_TIMEOUT=120 # seconds for all three brokers to become ready
STOP_TIMEOUT=60   # seconds for a clean shutdown before SIGKILL

if (($# > 1)); then
	echo "usage: $0 [DIR]" >&2
	exit 2
fi
mkdir -p "${1:-./samsa-cluster}"
DIR=$(cd "${1:-./samsa-cluster}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [[ -z ${SAMSA_BIN:-} ]]; then
	SAMSA_BIN=$DIR/samsa
	echo "building $SAMSA_BIN" >&2
	(cd "$ROOT" && go build -o "$SAMSA_BIN" ./cmd/samsa)
fi

# Each broker runs in its own process group (job control on), so the
# terminal's Ctrl-C reaches only this script, which then sends one SIGTERM
# per broker: a broker treats a second signal as "exit at once".
set -m

PIDS=()
stop() {
	local p i
	trap - INT TERM EXIT
	((${#PIDS[@]})) || return 0
	echo "stopping brokers (pids ${PIDS[*]})" >&2
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
		for p in "${PIDS[@]}"; do
			if kill -0 "$p" 2>/dev/null; then
				sleep 0.1
				continue 2
			fi
		done
		break
	done
	for p in "${PIDS[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			echo "broker pid $p did not stop in ${STOP_TIMEOUT}s; killing it" >&2
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
	wait 2>/dev/null || true
	PIDS=()
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

IC=
for i in 1 2 3; do
	IC+=${IC:+,}samsa-$i=http://$HOST:$((PEER_PORT + i - 1))
done
BOOTSTRAP=
for i in 1 2 3; do
	BOOTSTRAP+=${BOOTSTRAP:+,}$HOST:$((KAFKA_PORT + i - 1))
done

OFF=()
for i in 1 2 3; do
	touch "$DIR/broker-$i.log"
	OFF+=($(wc -l <"$DIR/broker-$i.log"))
	"$SAMSA_BIN" serve \
		--override node.id=$i \
		--override listeners=PLAINTEXT://$HOST:$((KAFKA_PORT + i - 1)) \
		--override admin.listener=$HOST:$((ADMIN_PORT + i - 1)) \
		--override log.dirs="$DIR/broker-$i" \
		--override etcd.name=samsa-$i \
		--override etcd.initial.cluster="$IC" \
		--override default.replication.factor=3 \
		--override min.insync.replicas=2 \
		>>"$DIR/broker-$i.log" 2>&1 &
	PIDS+=($!)
done

# A broker logs "samsa broker ready" once it serves; a new etcd cluster
# forms once a majority of members runs, so all three come up together.
start=$SECONDS
for i in 1 2 3; do
	until tail -n +"$((OFF[i - 1] + 1))" "$DIR/broker-$i.log" | grep -q 'samsa broker ready'; do
		if ! kill -0 "${PIDS[i - 1]}" 2>/dev/null; then
			echo "broker $i exited during startup; last lines of $DIR/broker-$i.log:" >&2
			tail -n 20 "$DIR/broker-$i.log" >&2
			exit 1
		fi
		if ((SECONDS - start > READY_TIMEOUT)); then
			echo "broker $i not ready after ${READY_TIMEOUT}s; see $DIR/broker-$i.log" >&2
			exit 1
		fi
		sleep 0.2
	done
done

cat <<MSG
samsa cluster of 3 brokers ready (data in $DIR, logs in $DIR/broker-{1,2,3}.log)

bootstrap servers: $BOOTSTRAP
admin HTTP:        http://$HOST:$ADMIN_PORT/metrics (and the next two ports)

  export SAMSA_BOOTSTRAP_SERVER=$BOOTSTRAP
  $SAMSA_BIN topic create demo --partitions 3
  printf 'a:1\nb:2\n' | $SAMSA_BIN produce demo --key-separator : --idempotent
  $SAMSA_BIN consume demo --from beginning --count 2

Ctrl-C stops the cluster.
MSG

# Returns when a broker exits by itself; Ctrl-C runs the trap instead.
status=0
wait -n || status=$?
for i in 1 2 3; do
	if ! kill -0 "${PIDS[i - 1]}" 2>/dev/null; then
		echo "broker $i exited (status $status); last lines of $DIR/broker-$i.log:" >&2
		tail -n 20 "$DIR/broker-$i.log" >&2
	fi
done
exit 1

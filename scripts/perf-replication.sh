#!/usr/bin/env bash
# perf-replication.sh: acks=all produce on three local brokers with
# replication factor 3 (min.insync.replicas 2) against one broker (RF=1),
# and produce latency at a fixed rate on both, and print medians.
#
# Usage: scripts/perf-replication.sh         (from the repository root)
#
# Two clusters run side by side, each on its own `samsa dev etcd`: one
# broker, and three brokers. Every run uses a new topic, created first and
# deleted after; the two setups alternate, which goes first changing with
# each repetition. Per repetition and partition count (1 and 8):
#   samsa perf produce --partitions P --records N --record-size 1024 --acks all
# and, on 1 partition:
#   samsa perf e2e --rate E2E_RATE --record-size 1024 --duration E2E_DUR --acks all
#
# Environment (all optional):
#   SAMSA_BIN    samsa binary (default: go build ./cmd/samsa)
#   WORK         scratch directory (default: a new /tmp/samsa-repl.XXXXXX)
#   REPS         repetitions (3)
#   N            records per produce run (300000)
#   IDEMPOTENT   set to 1 for --idempotent producers (five requests in flight)
#   E2E_RATE, E2E_DUR   fixed-rate latency load (10000 records/s, 10s)
#   PORT         first listener port (39300; uses PORT..PORT+3)
#
# Needs bash, jq and awk. Raw results go to $WORK/results.tsv: setup cell
# rep metric value.
set -euo pipefail

REPS=${REPS:-3}
N=${N:-300000}
E2E_RATE=${E2E_RATE:-10000}
E2E_DUR=${E2E_DUR:-10s}
PORT=${PORT:-39300}
WORK=${WORK:-$(mktemp -d /tmp/samsa-repl.XXXXXX)}
mkdir -p "$WORK"
RES=$WORK/results.tsv
: >"$RES"
EXTRA=()
[[ ${IDEMPOTENT:-} == 1 ]] && EXTRA=(--idempotent)

command -v jq >/dev/null || { echo "perf-replication: jq is required" >&2; exit 1; }
if [[ -z ${SAMSA_BIN:-} ]]; then
	SAMSA_BIN=$WORK/samsa
	go build -o "$SAMSA_BIN" ./cmd/samsa
fi

PIDS=()
BROKERS=()
cleanup() {
	local p
	# NB: brokers first: a broker's clean shutdown talks to etcd.
	for p in "${BROKERS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${BROKERS[@]}"; do wait "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

start_etcd() { # NAME: start an etcd member (not in a subshell: PIDS must keep it)
	"$SAMSA_BIN" dev etcd --data-dir "$WORK/etcd-$1" >"$WORK/etcd-$1.url" 2>"$WORK/etcd-$1.log" &
	PIDS+=($!)
}

etcd_url() { # NAME: print the client URL of a started member
	local i
	for ((i = 0; i < 200; i++)); do
		[[ -s $WORK/etcd-$1.url ]] && { head -1 "$WORK/etcd-$1.url"; return; }
		sleep 0.05
	done
	echo "perf-replication: etcd $1 did not start" >&2
	exit 1
}

broker() { # ID PORT ETCD RF MINISR
	"$SAMSA_BIN" serve --override node.id="$1" --override listeners=PLAINTEXT://127.0.0.1:"$2" \
		--override admin.listener= --override log.dirs="$WORK/broker-$2" \
		--override etcd.endpoints="$3" \
		--override default.replication.factor="$4" --override min.insync.replicas="$5" \
		>"$WORK/broker-$2.log" 2>&1 &
	BROKERS+=($!)
}

start_etcd one
start_etcd three
ONE_ETCD=$(etcd_url one)
THREE_ETCD=$(etcd_url three)
broker 1 "$PORT" "$ONE_ETCD" 1 1
for i in 1 2 3; do broker "$i" $((PORT + i)) "$THREE_ETCD" 3 2; done
declare -A ADDR=([one]=127.0.0.1:$PORT [three]=127.0.0.1:$((PORT + 1)),127.0.0.1:$((PORT + 2)),127.0.0.1:$((PORT + 3)))
declare -A RF=([one]=1 [three]=3) MINISR=([one]=1 [three]=2)

for ((i = 0; i < 600; i++)); do
	"$SAMSA_BIN" -b "${ADDR[three]}" cluster describe 2>/dev/null | grep -q 'Brokers: 3' && break
	sleep 0.1
done
"$SAMSA_BIN" -b "${ADDR[one]}" cluster describe >/dev/null

record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"; }

run() { # SETUP PARTS REP MODE
	local s=$1 parts=$2 rep=$3 mode=$4 topic="repl-$1-p$2-$4-r$3-$RANDOM" j
	"$SAMSA_BIN" -b "${ADDR[$s]}" topic create "$topic" --partitions "$parts" \
		--replication-factor "${RF[$s]}" --config min.insync.replicas="${MINISR[$s]}" >/dev/null
	if [[ $mode == produce ]]; then
		j=$("$SAMSA_BIN" -b "${ADDR[$s]}" perf produce --topic "$topic" --records "$N" \
			--record-size 1024 --acks all "${EXTRA[@]}" --json)
		record "$s" "p$parts" "$rep" rps "$(jq .records_per_sec <<<"$j")"
		record "$s" "p$parts" "$rep" errors "$(jq .errors <<<"$j")"
	else
		j=$("$SAMSA_BIN" -b "${ADDR[$s]}" perf e2e --topic "$topic" --rate "$E2E_RATE" \
			--record-size 1024 --duration "$E2E_DUR" --acks all "${EXTRA[@]}" --json)
		record "$s" e2e "$rep" produce_p99 "$(jq .latency_ms.p99 <<<"$j")"
		record "$s" e2e "$rep" e2e_p50 "$(jq .e2e_latency_ms.p50 <<<"$j")"
		record "$s" e2e "$rep" e2e_p99 "$(jq .e2e_latency_ms.p99 <<<"$j")"
	fi
	"$SAMSA_BIN" -b "${ADDR[$s]}" topic delete "$topic" >/dev/null
	log "$s p$parts $mode rep $rep done"
}

# Warm up both clusters: connections, leaders, page cache.
for s in one three; do run "$s" 8 0 produce; done
: >"$RES"

for ((r = 1; r <= REPS; r++)); do
	order="one three"
	((r % 2 == 0)) && order="three one"
	for parts in 1 8; do
		for s in $order; do run "$s" "$parts" "$r" produce; done
	done
	for s in $order; do run "$s" 1 "$r" e2e; done
done

median() { # SETUP CELL METRIC
	awk -F'\t' -v s="$1" -v c="$2" -v m="$3" '$1 == s && $2 == c && $4 == m {print $5}' "$RES" |
		sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

echo
echo "## acks=all, 1 KiB, $N records a run: records/s (median of $REPS)"
printf '%-6s | %12s %12s %8s\n' cell "1 broker" "RF=3" ratio
for c in p1 p8; do
	o=$(median one "$c" rps)
	t=$(median three "$c" rps)
	printf '%-6s | %12.0f %12.0f %8.2f\n' "$c" "$o" "$t" "$(awk -v a="$t" -v b="$o" 'BEGIN{print a / b}')"
done
echo
echo "## perf e2e, $E2E_RATE records/s of 1 KiB, acks=all, $E2E_DUR, 1 partition (median of $REPS; ms)"
for s in one three; do
	printf '%-6s  produce p99 %7.2f  e2e p50 %7.2f  e2e p99 %7.2f\n' "$s" \
		"$(median "$s" e2e produce_p99)" "$(median "$s" e2e e2e_p50)" "$(median "$s" e2e e2e_p99)"
done
echo
echo "errors: $(awk -F'\t' '$4 == "errors" {s += $5} END {print s + 0}' "$RES"); raw results: $RES"

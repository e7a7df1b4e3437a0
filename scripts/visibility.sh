#!/usr/bin/env bash
# visibility.sh: how long records acknowledged with acks=1 stay invisible
# (below the high watermark) under the default durable flush policy, while
# an acks=all producer loads the same broker.
#
# Usage: scripts/visibility.sh              (from the repository root)
#
# Each repetition produces, at the same time and on new topics:
#   samsa perf produce --acks 1   --record-size 1024 --partitions 8 --records N1K --visibility
#   samsa perf produce --acks all --record-size 100  --partitions 8 --records N100
# and prints one line: the acks=1 run's visibility lag p50/p99/max, the time
# from its last acknowledgement until every record was visible (drain), how
# many were invisible at that last acknowledgement, and both producers'
# records/s.
#
# Environment (all optional):
#   SAMSA_BIN    samsa binary that runs the broker (default: go build ./cmd/samsa)
#   CLIENT_BIN   samsa binary that runs the producers (default: SAMSA_BIN);
#                it needs perf produce --visibility
#   WORK         scratch directory (default: a new /tmp/samsa-vis.XXXXXX)
#   REPS         repetitions (3)
#   N1K, N100    records of the acks=1 / acks=all producer (300000 / 1000000)
#   PORT         listener port (29192)
set -euo pipefail

REPS=${REPS:-3}
N1K=${N1K:-300000}
N100=${N100:-1000000}
PORT=${PORT:-29192}
WORK=${WORK:-$(mktemp -d /tmp/samsa-vis.XXXXXX)}
mkdir -p "$WORK"

command -v jq >/dev/null || { echo "visibility: jq is required" >&2; exit 1; }
if [[ -z ${SAMSA_BIN:-} ]]; then
	SAMSA_BIN=$WORK/samsa
	go build -o "$SAMSA_BIN" ./cmd/samsa
fi
CLIENT_BIN=${CLIENT_BIN:-$SAMSA_BIN}
ADDR=127.0.0.1:$PORT

"$SAMSA_BIN" serve --override log.dirs="$WORK/data" \
	--override listeners=PLAINTEXT://$ADDR --override admin.listener= \
	>"$WORK/samsa.log" 2>&1 &
BROKER=$!
trap 'kill $BROKER 2>/dev/null || true; wait $BROKER 2>/dev/null || true' EXIT

for ((i = 0; i < 600; i++)); do
	"$CLIENT_BIN" -b "$ADDR" cluster describe >/dev/null 2>&1 && break
	kill -0 $BROKER 2>/dev/null || { echo "visibility: broker exited, see $WORK/samsa.log" >&2; exit 1; }
	sleep 0.05
done

printf 'rep\tlag_p50_ms\tlag_p99_ms\tlag_max_ms\tdrain_ms\tinvisible_at_last_ack\tacks1_rec_s\tacksall_rec_s\n'
for ((r = 1; r <= REPS; r++)); do
	one=vis-acks1-$r all=vis-acksall-$r
	"$CLIENT_BIN" -b "$ADDR" topic create "$one" --partitions 8 >/dev/null
	"$CLIENT_BIN" -b "$ADDR" topic create "$all" --partitions 8 >/dev/null
	"$CLIENT_BIN" -b "$ADDR" perf produce --topic "$all" --partitions 8 --records "$N100" \
		--record-size 100 --acks all --json --progress=false >"$WORK/all-$r.json" &
	other=$!
	"$CLIENT_BIN" -b "$ADDR" perf produce --topic "$one" --partitions 8 --records "$N1K" \
		--record-size 1024 --acks 1 --visibility --json --progress=false >"$WORK/one-$r.json"
	wait $other
	jq -r --arg r "$r" --slurpfile a "$WORK/all-$r.json" \
		'[$r, .visibility.lag_ms.p50, .visibility.lag_ms.p99, .visibility.lag_ms.max,
		  .visibility.drain_ms, .visibility.invisible_at_last_ack,
		  (.records_per_sec | floor), ($a[0].records_per_sec | floor)] | @tsv' "$WORK/one-$r.json"
	"$CLIENT_BIN" -b "$ADDR" topic delete "$one" "$all" >/dev/null
done

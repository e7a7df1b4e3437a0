#!/usr/bin/env bash
# docker-test.sh: build the samsa image, start the three-broker cluster of
# docker-compose.yml, and check that no acknowledged record is lost or
# duplicated while brokers are stopped, paused and cut off the network.
#
# Usage: scripts/docker-test.sh          (exits 0 only if every check passed)
#
# Steps, each followed by a check that consumes the whole topic from the
# beginning and compares it with every record acknowledged so far:
#   1. create topic dtest (3 partitions, replication factor 3,
#      min.insync.replicas=2), produce N records (acks=all, idempotent);
#   2. stop samsa3 (docker compose stop), produce N more; start it again
#      and wait until every partition has three in-sync replicas;
#   3. pause samsa2 (docker pause), produce N more, unpause; wait for the ISR;
#   4. disconnect samsa1 from the network, produce N more, reconnect.
# Client commands run in throwaway containers of the same image on the
# cluster's network, since the brokers advertise their service names.
#
# Everything it creates (compose project $PROJECT with its containers,
# network and volumes, and the client containers) is removed on exit,
# whether the test passed or not. Ports 9092-9094 and 9080-9082 must be
# free and no network named samsa may exist (docker-compose.yml's).
#
# Environment (all optional):
#   N        records per step (2000)
#   PROJECT  compose project name (samsadockertest)
#   IMAGE    image tag (samsa:local; docker-compose.yml uses samsa:local)
#
# Needs docker, docker compose or docker-compose, curl and go.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-2000}
PROJECT=${PROJECT:-samsadockertest}
IMAGE=${IMAGE:-samsa:local}
TOPIC=dtest
NET=samsa
BOOTSTRAP=samsa1:9092,samsa2:9093,samsa3:9094
LABEL=samsa.docker-test=$PROJECT
PRODUCE_TIMEOUT=240 # seconds for one step's records to be acknowledged
READY_TIMEOUT=180   # seconds for a broker to be ready / the ISR to be full

if docker compose version >/dev/null 2>&1; then
	COMPOSE=(docker compose -p "$PROJECT")
elif command -v docker-compose >/dev/null; then
	COMPOSE=(docker-compose -p "$PROJECT")
else
	echo "docker-test: needs docker compose or docker-compose" >&2
	exit 1
fi

log() { printf '%s docker-test: %s\n' "$(date +%T)" "$*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-docker-test.XXXXXX")
STARTED=0
cleanup() {
	local status=$? c
	trap - EXIT INT TERM
	if ((STARTED)); then
		if ((status != 0)); then
			log "broker logs (last 40 lines each):"
			"${COMPOSE[@]}" logs --no-color --tail 40 >&2 || true
		fi
		for c in $("${COMPOSE[@]}" ps -q 2>/dev/null); do
			docker unpause "$c" >/dev/null 2>&1 || true
		done
		"${COMPOSE[@]}" down -v --remove-orphans --timeout 20 >&2 || true
	fi
	for c in $(docker ps -aq --filter "label=$LABEL"); do
		docker rm -f "$c" >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
	if ((status == 0)); then
		log "PASS"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if docker network inspect "$NET" >/dev/null 2>&1; then
	fail "a docker network named $NET exists already (a cluster from docker-compose.yml still up?); take it down first"
fi

log "building build/samsa and image $IMAGE"
CGO_ENABLED=0 go build -trimpath -o build/samsa ./cmd/samsa
mkdir -p build/image/data build/image/tmp
docker build -q -t "$IMAGE" . >/dev/null

log "starting the cluster (project $PROJECT)"
STARTED=1
"${COMPOSE[@]}" up -d || fail "docker compose up failed"

# cli runs a samsa client command in a container on the cluster network.
cli() {
	docker run --rm -i --label "$LABEL" --network "$NET" \
		-e SAMSA_BOOTSTRAP_SERVER="$BOOTSTRAP" --entrypoint /samsa "$IMAGE" "$@"
}

container() { "${COMPOSE[@]}" ps -q "$1"; }

# wait_ready I waits for broker I's /readyz on its published admin port.
wait_ready() {
	local port=$((9079 + $1)) start=$SECONDS
	until curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null; do
		((SECONDS - start < READY_TIMEOUT)) || fail "samsa$1 not ready after ${READY_TIMEOUT}s"
		sleep 1
	done
}

# wait_isr_full waits until every partition of the topic has three in-sync
# replicas (topic describe: PARTITION LEADER EPOCH REPLICAS ISR ...).
wait_isr_full() {
	local start=$SECONDS out
	while :; do
		out=$(cli topic describe "$TOPIC" </dev/null 2>/dev/null || true)
		if awk '$1 ~ /^[0-9]+$/ { n++; if (split($5, r, ",") == 3) full++ }
			END { exit !(n == 3 && full == 3) }' <<<"$out"; then
			return 0
		fi
		if ((SECONDS - start >= READY_TIMEOUT)); then
			printf '%s\n' "$out" >&2
			fail "ISR of $TOPIC not back to 3 replicas after ${READY_TIMEOUT}s"
		fi
		sleep 2
	done
}

# produce STEP writes N keyed records whose values name the step, and adds
# them to the expected set once the producer reports every one acknowledged.
produce() {
	local step=$1
	awk -v s="$step" -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) printf "k%d:%s-%06d\n", i, s, i }' >"$WORK/$step.in"
	if ! timeout "$PRODUCE_TIMEOUT" docker run --rm -i --label "$LABEL" --network "$NET" \
		-e SAMSA_BOOTSTRAP_SERVER="$BOOTSTRAP" --entrypoint /samsa "$IMAGE" \
		produce "$TOPIC" --acks all --idempotent --key-separator : <"$WORK/$step.in"; then
		fail "$step: producing $N records failed"
	fi
	cut -d: -f2 "$WORK/$step.in" >>"$WORK/expected"
}

# check consumes the topic from the beginning and compares the values with
# the expected (acknowledged) ones: same set, each exactly once.
check() {
	local step=$1 want got
	want=$(wc -l <"$WORK/expected")
	cli consume "$TOPIC" --from beginning --count "$want" --timeout 30s </dev/null >"$WORK/got" || true
	sort "$WORK/expected" >"$WORK/want.sorted"
	sort "$WORK/got" >"$WORK/got.sorted"
	if ! cmp -s "$WORK/want.sorted" "$WORK/got.sorted"; then
		got=$(wc -l <"$WORK/got")
		log "$step: consumed $got records, $(sort -u "$WORK/got" | wc -l) distinct; want $want"
		log "$step: first missing: $(comm -23 "$WORK/want.sorted" "$WORK/got.sorted" | head -5 | tr '\n' ' ')"
		log "$step: first unexpected or duplicated: $(comm -13 "$WORK/want.sorted" "$WORK/got.sorted" | head -5 | tr '\n' ' ')"
		fail "$step: acknowledged records lost or duplicated"
	fi
	log "$step: ok, $want acknowledged records read back exactly once"
}

for i in 1 2 3; do
	wait_ready "$i"
done
log "cluster ready"
: >"$WORK/expected"

log "step 1: create $TOPIC and produce $N records"
cli topic create "$TOPIC" --partitions 3 --replication-factor 3 --config min.insync.replicas=2 </dev/null ||
	fail "step1: creating $TOPIC failed"
wait_isr_full
produce step1
check step1

log "step 2: stop samsa3, produce $N records"
"${COMPOSE[@]}" stop samsa3
produce step2
check step2
"${COMPOSE[@]}" start samsa3
wait_ready 3
wait_isr_full

log "step 3: pause samsa2, produce $N records, unpause"
c2=$(container samsa2)
docker pause "$c2" >/dev/null
produce step3
docker unpause "$c2" >/dev/null
check step3
wait_ready 2
wait_isr_full

log "step 4: disconnect samsa1 from the network, produce $N records, reconnect"
c1=$(container samsa1)
docker network disconnect "$NET" "$c1"
produce step4
docker network connect --alias samsa1 "$NET" "$c1"
check step4
# NB: no wait_ready here: whether docker publishes a container's ports
# again after a reconnect varies by version; a full ISR shows samsa1 back.
wait_isr_full
check final

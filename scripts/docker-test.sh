#!/usr/bin/env bash
# docker-test.sh: build the samsa image, start the three-broker cluster of
# docker-compose.yml, and check that no acknowledged record is lost or
# duplicated while brokers are stopped, paused and cut off the network.
#
# Usage: scripts/docker-test.sh          (exits 0 only if every check passed)
#
# Steps; each check consumes the whole topic from the beginning and compares
# it with every record acknowledged so far (same set, each exactly once):
#
#   step   fault while producing and checking
#   1      none (creates topic dtest: 3 partitions, replication factor 3,
#          min.insync.replicas=2)
#   2      samsa3 stopped (docker compose stop)
#   3      samsa2 frozen (docker pause)
#   4      samsa1 cut off (docker network disconnect)
#   final  none; checked once all three are back in every ISR
#
# Each of steps 1-4 produces N keyed records with acks=all and an
# idempotent producer, then runs its check before the fault is undone.
#
# After each fault the broker is brought back and the script waits until it
# is ready and every partition has three in-sync replicas again. Client
# commands run in throwaway containers of the same image on the cluster's
# network, since the brokers advertise their service names. Readiness is
# read from each broker's /readyz on its container address, which the host
# reaches on Linux; no host port is published, so the test runs beside a
# cluster started from docker-compose.yml or anything else on 9092-9094.
#
# Every run has its own compose project, network and image tag. Everything
# the run created (the project's containers, network and volumes, the
# client containers, the image tag) is removed on exit, whether the test
# passed, failed or was interrupted. On failure the brokers' last log lines
# are printed first. Every wait is bounded and says what it waited for.
# The last line on stdout is "docker-test: P passed, F failed" (checks).
#
# Environment (all optional):
#   N        records per step (2000)
#   PROJECT  compose project name (samsadt<pid>); the network is
#            <PROJECT>_net and the image samsa-docker-test:<PROJECT>
#
# Needs a docker engine, docker compose or docker-compose, curl and go.
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-2000}
PROJECT=${PROJECT:-samsadt$$}
TOPIC=dtest
BOOTSTRAP=samsa1:9092,samsa2:9093,samsa3:9094
LABEL=samsa.docker-test=$PROJECT

# Bounds, in seconds.
BUILD_TIMEOUT=600   # go build and docker build
UP_TIMEOUT=300      # docker compose up / start / stop
READY_TIMEOUT=180   # a broker's /readyz, a full ISR
PRODUCE_TIMEOUT=240 # one step's records acknowledged
CONSUME_IDLE=120    # a check's consumer gives up after no record for this long
CONSUME_TIMEOUT=300 # one check's consumer in all
CLIENT_TIMEOUT=120  # any other client command (create, describe)

# docker-compose.yml reads these; only the base file is used, so no host
# port is published (docker-compose.override.yml is not read).
export SAMSA_IMAGE=samsa-docker-test:$PROJECT
export SAMSA_NETWORK=${PROJECT}_net
IMAGE=$SAMSA_IMAGE
NET=$SAMSA_NETWORK

if docker compose version >/dev/null 2>&1; then
	COMPOSE=(docker compose -p "$PROJECT" -f docker-compose.yml)
elif command -v docker-compose >/dev/null; then
	COMPOSE=(docker-compose -p "$PROJECT" -f docker-compose.yml)
else
	echo "docker-test: needs docker compose or docker-compose" >&2
	exit 1
fi
for tool in docker curl go timeout; do
	command -v "$tool" >/dev/null || {
		echo "docker-test: needs $tool" >&2
		exit 1
	}
done

T0=$SECONDS
log() { printf '%s docker-test [%4ds]: %s\n' "$(date +%T)" "$((SECONDS - T0))" "$*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-docker-test.XXXXXX")
STARTED=0 # compose project may exist
BUILT=0   # image tag may exist
PASSED=0  # checks passed

# cleanup removes everything this run created; it runs on every exit.
cleanup() {
	local status=$? c v
	trap - EXIT INT TERM
	set +e
	if ((STARTED)); then
		if ((status != 0)); then
			log "containers of project $PROJECT:"
			docker ps -a --filter "label=com.docker.compose.project=$PROJECT" \
				--format '{{.Names}}  {{.Status}}' >&2
			log "broker logs (last 60 lines each):"
			for c in $(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT"); do
				log "--- $(docker inspect -f '{{.Name}}' "$c")"
				docker logs --tail 60 "$c" 2>&1 | sed 's/^/    /' >&2
			done
		fi
		for c in $(docker ps -q --filter "label=com.docker.compose.project=$PROJECT" --filter status=paused); do
			docker unpause "$c" >/dev/null 2>&1
		done
		timeout "$UP_TIMEOUT" "${COMPOSE[@]}" down -v --remove-orphans --timeout 5 >"$WORK/down.log" 2>&1 ||
			{ log "compose down failed:"; cat "$WORK/down.log" >&2; }
		# Whatever compose down left, and the client containers.
		for c in $(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT") \
			$(docker ps -aq --filter "label=$LABEL"); do
			docker rm -f -v "$c" >/dev/null 2>&1
		done
		if docker network inspect "$NET" >/dev/null 2>&1; then
			docker network rm "$NET" >/dev/null 2>&1
		fi
		for v in $(docker volume ls -q --filter "label=com.docker.compose.project=$PROJECT"); do
			docker volume rm "$v" >/dev/null 2>&1
		done
	fi
	if ((BUILT)); then
		docker rmi "$IMAGE" >/dev/null 2>&1
	fi
	rm -rf "$WORK"
	if ((status == 0)); then
		log "PASS in $((SECONDS - T0))s"
		echo "docker-test: $PASSED passed, 0 failed"
	else
		log "FAILED after $((SECONDS - T0))s (exit $status)"
		echo "docker-test: $PASSED passed, 1 failed"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if docker network inspect "$NET" >/dev/null 2>&1 ||
	[[ -n $(docker ps -aq --filter "label=com.docker.compose.project=$PROJECT") ]]; then
	fail "compose project $PROJECT or network $NET exists already; another run with PROJECT=$PROJECT?"
fi

log "building build/samsa and image $IMAGE"
CGO_ENABLED=0 timeout "$BUILD_TIMEOUT" go build -trimpath -o build/samsa ./cmd/samsa ||
	fail "go build failed"
mkdir -p build/image/data build/image/tmp
BUILT=1
timeout "$BUILD_TIMEOUT" docker build -q -t "$IMAGE" . >/dev/null 2>"$WORK/build.log" ||
	{ cat "$WORK/build.log" >&2; fail "docker build failed"; }

log "starting the cluster (project $PROJECT, network $NET)"
STARTED=1
timeout "$UP_TIMEOUT" "${COMPOSE[@]}" up -d || fail "docker compose up failed"

# run_client SECS ARGS... runs a samsa client command in a container on the
# cluster network, stdin from the caller, for at most SECS seconds. The
# bootstrap list names all three brokers, the faulty one included.
run_client() {
	local secs=$1
	shift
	timeout "$secs" docker run --rm -i --label "$LABEL" --network "$NET" \
		-e SAMSA_BOOTSTRAP_SERVER="$BOOTSTRAP" --entrypoint /samsa "$IMAGE" "$@"
}

# cli runs a short client command (topic create, describe).
cli() { run_client "$CLIENT_TIMEOUT" "$@"; }

container() {
	local id
	id=$("${COMPOSE[@]}" ps -q "$1") && [[ -n $id ]] || fail "no container for service $1"
	echo "$id"
}

# wait_ready I waits for broker samsaI's /readyz on its address in the
# cluster network (read again each time: a reconnect may change it).
wait_ready() {
	local c ip start=$SECONDS
	c=$(container "samsa$1")
	while :; do
		ip=$(docker inspect -f "{{with index .NetworkSettings.Networks \"$NET\"}}{{.IPAddress}}{{end}}" "$c" 2>/dev/null || true)
		if [[ -n $ip ]] && curl -fsS -m 3 -o /dev/null "http://$ip:9080/readyz" 2>/dev/null; then
			return 0
		fi
		((SECONDS - start < READY_TIMEOUT)) ||
			fail "samsa$1 not ready after ${READY_TIMEOUT}s (address '${ip}', /readyz on 9080)"
		sleep 1
	done
}

# wait_isr_full waits until every partition of the topic has three in-sync
# replicas (topic describe: PARTITION LEADER EPOCH REPLICAS ISR ...).
wait_isr_full() {
	local start=$SECONDS out
	while :; do
		out=$(cli topic describe "$TOPIC" </dev/null 2>&1 || true)
		if awk '$1 ~ /^[0-9]+$/ { n++; if (split($5, r, ",") == 3) full++ }
			END { exit !(n == 3 && full == 3) }' <<<"$out"; then
			log "ISR full: 3 partitions with 3 in-sync replicas after $((SECONDS - start))s"
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
	local step=$1 start=$SECONDS
	awk -v s="$step" -v n="$N" 'BEGIN { for (i = 1; i <= n; i++) printf "k%d:%s-%06d\n", i, s, i }' >"$WORK/$step.in"
	if ! run_client "$PRODUCE_TIMEOUT" produce "$TOPIC" --acks all --idempotent \
		--key-separator : <"$WORK/$step.in"; then
		fail "$step: producing $N records failed or took over ${PRODUCE_TIMEOUT}s"
	fi
	cut -d: -f2 "$WORK/$step.in" >>"$WORK/expected"
	log "$step: $N records acknowledged in $((SECONDS - start))s"
}

# check consumes the topic from the beginning and compares the values with
# the expected (acknowledged) ones: same set, each exactly once. NB: a new
# client that contacts a frozen (paused) seed broker waits out a request
# timeout each time, about 20 s; hence the long idle limit.
check() {
	local step=$1 want got start=$SECONDS
	want=$(wc -l <"$WORK/expected")
	run_client "$CONSUME_TIMEOUT" consume "$TOPIC" --from beginning --count "$want" \
		--timeout "${CONSUME_IDLE}s" </dev/null >"$WORK/got" 2>"$WORK/consume.err" || true
	sort "$WORK/expected" >"$WORK/want.sorted"
	sort "$WORK/got" >"$WORK/got.sorted"
	if ! cmp -s "$WORK/want.sorted" "$WORK/got.sorted"; then
		got=$(wc -l <"$WORK/got")
		log "$step: consumed $got records, $(sort -u "$WORK/got" | wc -l) distinct; want $want"
		log "$step: first missing: $(comm -23 "$WORK/want.sorted" "$WORK/got.sorted" | head -5 | tr '\n' ' ')"
		log "$step: first unexpected or duplicated: $(comm -13 "$WORK/want.sorted" "$WORK/got.sorted" | head -5 | tr '\n' ' ')"
		log "$step: consumer stderr (last 20 lines):"
		tail -20 "$WORK/consume.err" >&2
		fail "$step: acknowledged records lost or duplicated"
	fi
	PASSED=$((PASSED + 1))
	log "$step: ok, $want acknowledged records read back exactly once ($((SECONDS - start))s)"
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

log "step 2: stop samsa3, produce $N records and consume while it is down"
timeout "$UP_TIMEOUT" "${COMPOSE[@]}" stop samsa3 || fail "step2: docker compose stop samsa3 failed"
produce step2
check step2
timeout "$UP_TIMEOUT" "${COMPOSE[@]}" start samsa3 || fail "step2: docker compose start samsa3 failed"
wait_ready 3
wait_isr_full

log "step 3: pause samsa2, produce $N records and consume while it is frozen"
c2=$(container samsa2)
docker pause "$c2" >/dev/null || fail "step3: docker pause samsa2 failed"
produce step3
check step3
docker unpause "$c2" >/dev/null || fail "step3: docker unpause samsa2 failed"
wait_ready 2
wait_isr_full

log "step 4: disconnect samsa1 from $NET, produce $N records and consume while it is cut off"
c1=$(container samsa1)
docker network disconnect "$NET" "$c1" || fail "step4: docker network disconnect failed"
produce step4
check step4
docker network connect --alias samsa1 "$NET" "$c1" || fail "step4: docker network connect failed"
wait_ready 1
wait_isr_full
check final

#!/usr/bin/env bash
# docker-test.sh: build the samsa image, start the three-broker cluster of
# docker-compose.yml, and check that no acknowledged record is lost or
# duplicated while brokers are stopped, paused and cut off the network.
#
# Usage: scripts/docker-test.sh                     (the plain cluster)
#        MODES=secure scripts/docker-test.sh        (the SASL_SSL cluster)
#        MODES="plain secure" scripts/docker-test.sh (both, one after the other)
# It exits 0 only if every check passed.
#
# Before any mode it checks the image that scripts/docker-image.sh built
# (the build make docker-image runs): its OCI labels name the commit, it
# runs as 65532, its HEALTHCHECK runs samsa healthcheck, samsa version in
# it prints the commit; and that a plain docker build of a context
# without build/ fails naming build/image/run-make-docker-image-first.
#
# Steps; each check consumes the whole topic from the beginning and compares
# it with every record acknowledged so far (same set, each exactly once):
#
#   step   fault while producing and checking
#   1      none (creates topic dtest: 3 partitions, replication factor 3,
#          min.insync.replicas=2)
#   host   none; plain mode only: a producer and a consumer on the host's
#          network that bootstrap from samsa1's published EXTERNAL port
#          on localhost alone
#   2      samsa3 stopped (docker compose stop)
#   3      samsa2 frozen (docker pause)
#   4      samsa1 cut off (docker network disconnect)
#   final  none; checked once all three are back in every ISR
#
# Each of steps 1-4 produces N keyed records with acks=all and an
# idempotent producer, then runs its check before the fault is undone.
#
# After each fault the broker is brought back and the script waits until it
# is ready and every partition has three in-sync replicas again. Readiness
# is read from each broker's /readyz on its container address, which the
# host reaches on Linux. Once the cluster is first ready, each mode also
# waits (a check) until docker reports all three containers healthy.
#
# Modes (MODES, in the order given; a failure ends the run):
#
#   plain   docker-compose.yml with docker-compose.override.yml, as
#           make docker-up runs it: PLAINTEXT INTERNAL listeners advertised
#           by service name, and EXTERNAL ones published on 127.0.0.1 at
#           free ports (not 9092-9094, so the test runs beside a cluster
#           started from docker-compose.yml) and advertised as localhost.
#           Client commands run in throwaway containers of the same image
#           on the cluster's network against INTERNAL, except those of
#           step host.
#   secure  docker-compose.yml with docker-compose.secure.yml: every
#           listener SASL_SSL with SCRAM-SHA-512 and the authorizer on,
#           certificates from `samsa dev certs` in a directory of the run
#           mounted read-only. Producers and consumers run on the host's
#           network and bootstrap from the EXTERNAL listeners, published on
#           127.0.0.1 at free ports and advertised as localhost; topic
#           commands run on the cluster's network against the INTERNAL
#           listeners (client certificate required), which the brokers also
#           replicate over. After step 1 it checks that the brokers refuse
#           plain text on both listeners, TLS without SASL, INTERNAL
#           without a client certificate, a wrong password, and a user
#           without ACLs. STEPS="1 2" runs a subset of steps 2-4.
#
# Every mode has its own compose project and network; the run has its own
# image tag. Everything the run created (the projects' containers,
# networks and volumes, the client containers, the image tag, the
# certificates) is removed on exit, whether the test passed, failed or was
# interrupted; a mode's project is removed before the next mode starts. On
# failure the brokers' last log lines are printed first. Every wait is
# bounded and says what it waited for. The last line on stdout is
# "docker-test: P passed, F failed" (checks of all modes).
#
# Environment (all optional):
#   MODES    plain, secure or both, space separated ("plain")
#   N        records per step (2000)
#   STEPS    which of steps 2, 3 and 4 to run ("2 3 4"); 1 and final
#            always run
#   PROJECT  run name (samsadt<pid>); the compose project of mode M is
#            <PROJECT><M>, its network <PROJECT><M>_net, the image
#            samsa-docker-test:<PROJECT>
#   PLAIN_PORTS   six host ports for the plain mode: samsa1-3's EXTERNAL
#            listeners, then their admin HTTP (free ones found from
#            20000 up)
#   SECURE_PORTS  three host ports for the secure mode's EXTERNAL
#            listeners (likewise)
#
# Needs a docker engine, docker compose or docker-compose, curl and go.
set -euo pipefail
cd "$(dirname "$0")/.."

MODES=${MODES:-plain}
N=${N:-2000}
STEPS=${STEPS:-2 3 4}
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

for m in $MODES; do
	case $m in
	plain | secure) ;;
	*)
		echo "docker-test: unknown mode '$m' in MODES (plain, secure)" >&2
		exit 2
		;;
	esac
done
for s in $STEPS; do
	case $s in
	2 | 3 | 4) ;;
	*)
		echo "docker-test: unknown step '$s' in STEPS (2, 3, 4)" >&2
		exit 2
		;;
	esac
done

if docker compose version >/dev/null 2>&1; then
	COMPOSE_CMD=(docker compose)
elif command -v docker-compose >/dev/null; then
	COMPOSE_CMD=(docker-compose)
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

# The compose files read SAMSA_IMAGE and SAMSA_NETWORK (and, in secure
# mode, the variables set in start_mode).
export SAMSA_IMAGE=samsa-docker-test:$PROJECT
IMAGE=$SAMSA_IMAGE

# The script's own stdout and stderr, for cleanup: a signal that arrives
# while a client command's output is redirected into a file runs the trap
# with that redirection still in place.
exec 8>&1 9>&2

T0=$SECONDS
MODE=-
log() { printf '%s docker-test [%4ds] %s: %s\n' "$(date +%T)" "$((SECONDS - T0))" "$MODE" "$*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/samsa-docker-test.XXXXXX")
STARTED=0 # the current mode's compose project may exist
BUILT=0   # image tag may exist
PASSED=0  # checks passed, all modes

# teardown STATUS removes the current mode's project (containers, network,
# volumes) and the client containers, printing the brokers' logs first
# when STATUS is not 0.
teardown() {
	local status=$1 c v
	if ((status != 0)); then
		log "containers of project $CPROJECT:"
		docker ps -a --filter "label=com.docker.compose.project=$CPROJECT" \
			--format '{{.Names}}  {{.Status}}' >&2
		log "broker logs (last 60 lines each):"
		for c in $(docker ps -aq --filter "label=com.docker.compose.project=$CPROJECT"); do
			log "--- $(docker inspect -f '{{.Name}}' "$c")"
			docker logs --tail 60 "$c" 2>&1 | sed 's/^/    /' >&2
		done
	fi
	for c in $(docker ps -q --filter "label=com.docker.compose.project=$CPROJECT" --filter status=paused); do
		docker unpause "$c" >/dev/null 2>&1
	done
	timeout "$UP_TIMEOUT" "${COMPOSE[@]}" down -v --remove-orphans --timeout 5 >"$WORK/down.log" 2>&1 ||
		{ log "compose down failed:"; cat "$WORK/down.log" >&2; }
	# Whatever compose down left, and the client containers.
	for c in $(docker ps -aq --filter "label=com.docker.compose.project=$CPROJECT") \
		$(docker ps -aq --filter "label=$LABEL"); do
		docker rm -f -v "$c" >/dev/null 2>&1
	done
	if docker network inspect "$NET" >/dev/null 2>&1; then
		docker network rm "$NET" >/dev/null 2>&1
	fi
	for v in $(docker volume ls -q --filter "label=com.docker.compose.project=$CPROJECT"); do
		docker volume rm "$v" >/dev/null 2>&1
	done
	STARTED=0
}

# cleanup removes everything this run created; it runs on every exit.
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	set +e
	exec 1>&8 2>&9
	if ((STARTED)); then
		teardown "$status"
	fi
	MODE=-
	if ((BUILT)); then
		docker rmi "$IMAGE" >/dev/null 2>&1
	fi
	rm -rf "$WORK"
	if ((status == 0)); then
		log "PASS in $((SECONDS - T0))s (modes: $MODES)"
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

# port_free P: nothing listens on 127.0.0.1:P.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# free_ports N PRESET prints PRESET if it is not empty, else N ports
# nothing listens on, from 20000 up (below the usual ephemeral range).
free_ports() {
	local n=$1 p found=()
	if [[ -n $2 ]]; then
		echo "$2"
		return
	fi
	for ((p = 20000 + RANDOM % 1000; p < 32000 && ${#found[@]} < n; p++)); do
		if port_free "$p"; then
			found+=("$p")
		fi
	done
	((${#found[@]} == n)) || fail "no $n free ports between 20000 and 32000"
	echo "${found[@]}"
}

# start_mode M sets the compose command, network and client options of
# mode M and starts its cluster.
start_mode() {
	MODE=$1
	CPROJECT=$PROJECT$MODE
	NET=${CPROJECT}_net
	export SAMSA_NETWORK=$NET
	COMPOSE=("${COMPOSE_CMD[@]}" -p "$CPROJECT" -f docker-compose.yml)
	if docker network inspect "$NET" >/dev/null 2>&1 ||
		[[ -n $(docker ps -aq --filter "label=com.docker.compose.project=$CPROJECT") ]]; then
		fail "compose project $CPROJECT or network $NET exists already; another run with PROJECT=$PROJECT?"
	fi
	case $MODE in
	plain)
		# The files make docker-up reads, on free host ports.
		local ports
		ports=($(free_ports 6 "${PLAIN_PORTS:-}"))
		((${#ports[@]} == 6)) || fail "PLAIN_PORTS must name six ports"
		COMPOSE+=(-f docker-compose.override.yml)
		export SAMSA1_EXTERNAL_PORT=${ports[0]} SAMSA2_EXTERNAL_PORT=${ports[1]} SAMSA3_EXTERNAL_PORT=${ports[2]}
		export SAMSA1_ADMIN_PORT=${ports[3]} SAMSA2_ADMIN_PORT=${ports[4]} SAMSA3_ADMIN_PORT=${ports[5]}
		DATA_CLIENT=(--network "$NET" -e SAMSA_BOOTSTRAP_SERVER="$BOOTSTRAP")
		ADMIN_CLIENT=("${DATA_CLIENT[@]}")
		# Step host: only samsa1's port; the others come from the
		# metadata, as localhost:<port>.
		HOST_CLIENT=(--network host -e SAMSA_BOOTSTRAP_SERVER=localhost:${ports[0]})
		log "EXTERNAL listeners on localhost:${ports[0]},localhost:${ports[1]},localhost:${ports[2]}; admin HTTP on ${ports[3]}-${ports[5]}"
		;;
	secure)
		local certs=$WORK/certs ports
		ports=($(free_ports 3 "${SECURE_PORTS:-}"))
		((${#ports[@]} == 3)) || fail "SECURE_PORTS must name three ports"
		COMPOSE+=(-f docker-compose.secure.yml)
		export SAMSA_CERTS_DIR=$certs SAMSA_CERTS_GID
		SAMSA_CERTS_GID=$(id -g)
		export SAMSA1_EXTERNAL_PORT=${ports[0]} SAMSA2_EXTERNAL_PORT=${ports[1]} SAMSA3_EXTERNAL_PORT=${ports[2]}
		export SAMSA_ADMIN_PASSWORD=dt-$RANDOM$RANDOM
		# As docker-compose.secure.yml's header says: the brokers
		# (uid 65532) read the two keys through the group of their
		# owner, which they join.
		build/samsa dev certs "$certs" --host samsa1 --host samsa2 --host samsa3 >/dev/null ||
			fail "samsa dev certs failed"
		chmod g+r "$certs/server.pem" "$certs/client.key"
		SECURE_ENV=(-v "$certs:/certs:ro" -e SAMSA_TLS_CA=/certs/ca.pem
			-e SAMSA_SASL_MECHANISM=SCRAM-SHA-512 -e SAMSA_USER=admin)
		EXTERNAL=localhost:${ports[0]},localhost:${ports[1]},localhost:${ports[2]}
		DATA_CLIENT=(--network host -e SAMSA_BOOTSTRAP_SERVER="$EXTERNAL"
			"${SECURE_ENV[@]}" -e SAMSA_PASSWORD="$SAMSA_ADMIN_PASSWORD")
		INTERNAL_CLIENT=(--network "$NET" --group-add "$SAMSA_CERTS_GID" -e SAMSA_BOOTSTRAP_SERVER="$BOOTSTRAP"
			-e SAMSA_TLS_CERT=/certs/client.pem -e SAMSA_TLS_KEY=/certs/client.key "${SECURE_ENV[@]}")
		ADMIN_CLIENT=("${INTERNAL_CLIENT[@]}" -e SAMSA_PASSWORD="$SAMSA_ADMIN_PASSWORD")
		log "EXTERNAL listeners on $EXTERNAL"
		;;
	esac
	CLIENT=("${DATA_CLIENT[@]}")
	log "starting the cluster (project $CPROJECT, network $NET)"
	STARTED=1
	timeout "$UP_TIMEOUT" "${COMPOSE[@]}" up -d || fail "docker compose up failed"
}

# run_client SECS ARGS... runs a samsa producer or consumer in a container
# (CLIENT: the mode's DATA_CLIENT options, HOST_CLIENT in step host),
# stdin from the caller, for at most SECS seconds. DATA_CLIENT's bootstrap
# list names all three brokers, the faulty one included.
run_client() {
	local secs=$1
	shift
	timeout "$secs" docker run --rm -i --label "$LABEL" "${CLIENT[@]}" \
		--entrypoint /samsa "$IMAGE" "$@"
}

# cli runs a short client command (topic create, describe) with the mode's
# ADMIN_CLIENT options.
cli() {
	timeout "$CLIENT_TIMEOUT" docker run --rm -i --label "$LABEL" "${ADMIN_CLIENT[@]}" \
		--entrypoint /samsa "$IMAGE" "$@"
}

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

# refused WHAT PATTERN OPTIONS... runs a client command (OPTIONS are docker
# run options, then -- and the samsa arguments) that the cluster must
# refuse: exit 1 (not a timeout), nothing on stdout, and PATTERN
# (extended, case-insensitive) in the error.
refused() {
	local what=$1 pattern=$2 rc=0 opts=()
	shift 2
	while (($#)) && [[ $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	shift
	timeout "$CLIENT_TIMEOUT" docker run --rm --label "$LABEL" "${opts[@]}" \
		--entrypoint /samsa "$IMAGE" "$@" </dev/null >"$WORK/refused.out" 2>"$WORK/refused.err" || rc=$?
	if ((rc != 1)) || [[ -s $WORK/refused.out ]] || ! grep -qiE "$pattern" "$WORK/refused.err"; then
		log "$what: exit $rc (want 1), stdout:"
		cat "$WORK/refused.out" >&2
		log "$what: stderr:"
		cat "$WORK/refused.err" >&2
		fail "$what: not refused as expected (want exit 1 and /$pattern/ in the error)"
	fi
	PASSED=$((PASSED + 1))
	log "$what: refused: $(head -1 "$WORK/refused.err" | cut -c1-160)"
}

# refusals checks what the secure cluster must not serve, on a broker of
# each listener: plain text, TLS without SASL, no client certificate on
# INTERNAL, a wrong password, and a user without ACLs (the authorizer).
refusals() {
	local wrong=(-e SAMSA_PASSWORD=wrong-"$SAMSA_ADMIN_PASSWORD")
	refused "plain text to EXTERNAL" 'TLS|connection' \
		--network host -e SAMSA_BOOTSTRAP_SERVER="${EXTERNAL%%,*}" -- topic list
	refused "plain text to INTERNAL" 'TLS|connection' \
		--network "$NET" -e SAMSA_BOOTSTRAP_SERVER=samsa2:9093 -- topic list
	refused "TLS without SASL to EXTERNAL" 'SASL|connection' \
		--network host -v "$WORK/certs:/certs:ro" -e SAMSA_TLS_CA=/certs/ca.pem \
		-e SAMSA_BOOTSTRAP_SERVER="${EXTERNAL%%,*}" -- topic list
	refused "INTERNAL without a client certificate" 'certificate' \
		--network "$NET" -e SAMSA_BOOTSTRAP_SERVER=samsa3:9094 "${SECURE_ENV[@]}" \
		-e SAMSA_PASSWORD="$SAMSA_ADMIN_PASSWORD" -- topic list
	refused "wrong password to EXTERNAL" 'SASL_AUTHENTICATION_FAILED' \
		--network host -e SAMSA_BOOTSTRAP_SERVER="$EXTERNAL" "${SECURE_ENV[@]}" "${wrong[@]}" -- topic list
	refused "wrong password to INTERNAL" 'SASL_AUTHENTICATION_FAILED' \
		"${INTERNAL_CLIENT[@]}" "${wrong[@]}" -- topic list
	cli user create dtest-noacl --mechanism SCRAM-SHA-512 --new-password dtest-noacl-secret </dev/null >/dev/null ||
		fail "creating user dtest-noacl failed"
	refused "user without ACLs reads $TOPIC" 'TOPIC_AUTHORIZATION_FAILED' \
		--network host -v "$WORK/certs:/certs:ro" -e SAMSA_TLS_CA=/certs/ca.pem \
		-e SAMSA_SASL_MECHANISM=SCRAM-SHA-512 -e SAMSA_USER=dtest-noacl -e SAMSA_PASSWORD=dtest-noacl-secret \
		-e SAMSA_BOOTSTRAP_SERVER="$EXTERNAL" -- consume "$TOPIC" --from beginning --count 1 --timeout 20s
}

has_step() { [[ " $STEPS " == *" $1 "* ]]; }

# check_image checks the image scripts/docker-image.sh built: the OCI
# labels name this tree's commit and its version, it runs as 65532, its
# HEALTHCHECK runs samsa healthcheck, and samsa version in it prints the
# same version and commit.
check_image() {
	local rev labels user health out want
	rev=$(git rev-parse HEAD 2>/dev/null || true)
	rev=${rev:-unknown}
	labels=$(docker inspect -f '{{range $k, $v := .Config.Labels}}{{$k}}={{$v}}{{"\n"}}{{end}}' "$IMAGE") ||
		fail "image: docker inspect $IMAGE failed"
	user=$(docker inspect -f '{{.Config.User}}' "$IMAGE")
	health=$(docker inspect -f '{{if .Config.Healthcheck}}{{join .Config.Healthcheck.Test " "}}{{end}}' "$IMAGE")
	label() { sed -n "s/^org\.opencontainers\.image\.$1=//p" <<<"$labels"; }
	[[ $(label revision) == "$rev" ]] || { printf '%s\n' "$labels" >&2; fail "image: revision label is not $rev"; }
	[[ -n $(label version) && $(label created) =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] ||
		{ printf '%s\n' "$labels" >&2; fail "image: version or created label missing"; }
	[[ $(label title) == samsa && -n $(label licenses) ]] || fail "image: title or licenses label missing"
	[[ $user == 65532:65532 ]] || fail "image: runs as '$user', want 65532:65532"
	[[ $health == "CMD /samsa healthcheck"* ]] || fail "image: HEALTHCHECK is '$health', want /samsa healthcheck"
	out=$(timeout "$CLIENT_TIMEOUT" docker run --rm --label "$LABEL" --entrypoint /samsa "$IMAGE" version) ||
		fail "image: samsa version failed"
	want="samsa $(label version)"$'\n'"commit: $rev"
	[[ $out == "$want"* ]] || fail "image: samsa version printed '$out', want it to start '$want'"
	PASSED=$((PASSED + 1))
	log "image: labels version $(label version), revision $rev; user $user; healthcheck '$health'"
}

# check_bare_build checks that a docker build of a context that holds the
# Dockerfile but nothing make docker-image writes fails, naming the marker
# whose name says what to run.
check_bare_build() {
	local id
	mkdir "$WORK/bare"
	cp Dockerfile .dockerignore "$WORK/bare/"
	if id=$(timeout "$BUILD_TIMEOUT" docker build --force-rm -q "$WORK/bare" 2>"$WORK/bare.err"); then
		docker rmi "$id" >/dev/null 2>&1
		fail "bare docker build: succeeded without build/"
	fi
	grep -q 'build/image/run-make-docker-image-first' "$WORK/bare.err" ||
		{ cat "$WORK/bare.err" >&2; fail "bare docker build: the error does not name build/image/run-make-docker-image-first"; }
	PASSED=$((PASSED + 1))
	log "bare docker build: refused: $(grep -m1 'COPY failed' "$WORK/bare.err" | cut -c1-200)"
}

# wait_healthy waits until docker reports all three brokers healthy (the
# image's HEALTHCHECK, samsa healthcheck on /readyz).
wait_healthy() {
	local start=$SECONDS i c st all states
	while :; do
		all=1 states=""
		for i in 1 2 3; do
			c=$(container "samsa$i")
			st=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}no healthcheck{{end}}' "$c")
			states+=" samsa$i=$st"
			[[ $st == healthy ]] || all=0
		done
		if ((all)); then
			PASSED=$((PASSED + 1))
			log "healthcheck: all three containers healthy after $((SECONDS - start))s"
			return 0
		fi
		((SECONDS - start < READY_TIMEOUT)) || fail "healthcheck: not all healthy after ${READY_TIMEOUT}s:$states"
		sleep 2
	done
}

# run_mode M runs steps 1-4 and the final check on mode M's cluster.
run_mode() {
	local c1 c2
	start_mode "$1"
	for i in 1 2 3; do
		wait_ready "$i"
	done
	log "cluster ready"
	wait_healthy
	: >"$WORK/expected"

	log "step 1: create $TOPIC and produce $N records"
	cli topic create "$TOPIC" --partitions 3 --replication-factor 3 --config min.insync.replicas=2 </dev/null ||
		fail "step1: creating $TOPIC failed"
	wait_isr_full
	produce step1
	check step1
	if [[ $MODE == secure ]]; then
		refusals
	fi
	if [[ $MODE == plain ]]; then
		log "step host: produce $N records and consume on the host's network, bootstrapping from ${HOST_CLIENT[-1]#*=}"
		CLIENT=("${HOST_CLIENT[@]}")
		produce host
		check host
		CLIENT=("${DATA_CLIENT[@]}")
	fi

	if has_step 2; then
		log "step 2: stop samsa3, produce $N records and consume while it is down"
		timeout "$UP_TIMEOUT" "${COMPOSE[@]}" stop samsa3 || fail "step2: docker compose stop samsa3 failed"
		produce step2
		check step2
		timeout "$UP_TIMEOUT" "${COMPOSE[@]}" start samsa3 || fail "step2: docker compose start samsa3 failed"
		wait_ready 3
		wait_isr_full
	fi

	if has_step 3; then
		log "step 3: pause samsa2, produce $N records and consume while it is frozen"
		c2=$(container samsa2)
		docker pause "$c2" >/dev/null || fail "step3: docker pause samsa2 failed"
		produce step3
		check step3
		docker unpause "$c2" >/dev/null || fail "step3: docker unpause samsa2 failed"
		wait_ready 2
		wait_isr_full
	fi

	if has_step 4; then
		log "step 4: disconnect samsa1 from $NET, produce $N records and consume while it is cut off"
		c1=$(container samsa1)
		docker network disconnect "$NET" "$c1" || fail "step4: docker network disconnect failed"
		produce step4
		check step4
		docker network connect --alias samsa1 "$NET" "$c1" || fail "step4: docker network connect failed"
		wait_ready 1
		wait_isr_full
	fi
	check final
	log "done in $((SECONDS - MODE_T0))s"
}

log "building build/samsa and image $IMAGE (scripts/docker-image.sh)"
BUILT=1
timeout "$BUILD_TIMEOUT" scripts/docker-image.sh "$IMAGE" >"$WORK/build.log" 2>&1 ||
	{ cat "$WORK/build.log" >&2; fail "scripts/docker-image.sh failed"; }
check_image
check_bare_build

for m in $MODES; do
	MODE_T0=$SECONDS
	run_mode "$m"
	teardown 0
done

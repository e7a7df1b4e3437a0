#!/usr/bin/env bash
# perf-compare.sh: measure samsa against kfake (franz-go's in-memory broker)
# under the same client load on this machine, and print tables of medians.
#
# Usage: scripts/perf-compare.sh            (from the repository root)
#
# Environment (all optional):
#   SAMSA_BIN    prebuilt samsa-dev binary (default: go build ./cmd/samsa-dev;
#                the production samsa has no `dev kfake`)
#   WORK         scratch directory (default: a new /tmp/samsa-perf.XXXXXX)
#   REPS         repetitions of each cell, alternating samsa/kfake (3)
#   N1K, N100    records per produce run of 1 KiB / 100 B values (300000 / 1000000)
#   E2E_RATE, E2E_DUR   e2e load (10000 records/s, 10s), 1 KiB, acks=all
#   STARTUP_REPS samsa cold starts to time (5)
#   SAMSA_PORT, KFAKE_PORT, START_PORT   listener ports (29092, 29093, 29094)
#
# Needs bash, jq, awk and /proc. Raw results go to $WORK/results.tsv, one
# line per measurement: section broker cell rep metric value.
set -euo pipefail

REPS=${REPS:-3}
N1K=${N1K:-300000}
N100=${N100:-1000000}
E2E_RATE=${E2E_RATE:-10000}
E2E_DUR=${E2E_DUR:-10s}
STARTUP_REPS=${STARTUP_REPS:-5}
SAMSA_PORT=${SAMSA_PORT:-29092}
KFAKE_PORT=${KFAKE_PORT:-29093}
START_PORT=${START_PORT:-29094}
WORK=${WORK:-$(mktemp -d /tmp/samsa-perf.XXXXXX)}
mkdir -p "$WORK"
RES=$WORK/results.tsv
: >"$RES"
HZ=$(getconf CLK_TCK)

command -v jq >/dev/null || { echo "perf-compare: jq is required" >&2; exit 1; }

if [[ -z ${SAMSA_BIN:-} ]]; then
	SAMSA_BIN=$WORK/samsa-dev
	go build -o "$SAMSA_BIN" ./cmd/samsa-dev
fi

declare -A ADDR=([samsa]=127.0.0.1:$SAMSA_PORT [kfake]=127.0.0.1:$KFAKE_PORT)
declare -A PID=()

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

cleanup() {
	local p
	for p in "${PID[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT

now_ns() { date +%s%N; }

# probe HOST PORT: succeeds when the listener answers an ApiVersions v0
# request (api key 18, correlation id 1) with correlation id 1.
probe() {
	local out
	out=$(timeout 2 bash -c '
		exec 3<>"/dev/tcp/$0/$1" || exit 1
		printf "\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff" >&3
		head -c 8 <&3 | od -An -tx1' "$1" "$2" 2>/dev/null) || return 1
	[[ $(echo $out) == "00 "*" 00 00 00 01" ]]
}

wait_ready() { # HOST PORT
	local i
	for ((i = 0; i < 600; i++)); do
		probe "$1" "$2" && return 0
		sleep 0.05
	done
	echo "perf-compare: nothing answers on $1:$2" >&2
	return 1
}

# cpu_ticks PID: utime+stime of the process in clock ticks.
cpu_ticks() {
	local s
	s=$(<"/proc/$1/stat")
	s=${s##*) } # drop "pid (comm) "; fields now start at state (field 3)
	awk '{print $12 + $13}' <<<"$s"
}

record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RES"; }

perf() { # BROKER ARGS...
	local b=$1
	shift
	"$SAMSA_BIN" -b "${ADDR[$b]}" perf "$@" --json
}

# one_run BROKER PARTS SIZE ACKS REP [IDEMPOTENT] : produce then consume a new
# topic, record throughput, latency and broker CPU per record, delete it.
one_run() {
	local b=$1 parts=$2 size=$3 acks=$4 rep=$5 idem=${6:-}
	local n=$N1K section=prod cell extra=()
	((size < 1024)) && n=$N100
	cell="p${parts}-s${size}-a${acks}"
	if [[ -n $idem ]]; then
		section=idem
		cell="p${parts}-s${size}-${idem}"
		[[ $idem == on ]] && extra=(--idempotent)
	fi
	local topic="pc-${cell}-r${rep}-$RANDOM"
	local c0 c1 j
	c0=$(cpu_ticks "${PID[$b]}")
	j=$(perf "$b" produce --topic "$topic" --partitions "$parts" --records "$n" \
		--record-size "$size" --acks "$acks" "${extra[@]}")
	c1=$(cpu_ticks "${PID[$b]}")
	record "$section" "$b" "$cell" "$rep" rps "$(jq .records_per_sec <<<"$j")"
	record "$section" "$b" "$cell" "$rep" mbps "$(jq .mb_per_sec <<<"$j")"
	record "$section" "$b" "$cell" "$rep" p50 "$(jq .latency_ms.p50 <<<"$j")"
	record "$section" "$b" "$cell" "$rep" p99 "$(jq .latency_ms.p99 <<<"$j")"
	record "$section" "$b" "$cell" "$rep" cpu_us "$(awk -v d=$((c1 - c0)) -v hz="$HZ" -v n="$n" 'BEGIN{print d/hz*1e6/n}')"
	if [[ $section == prod ]]; then
		c0=$(cpu_ticks "${PID[$b]}")
		j=$(perf "$b" consume --topic "$topic" --records "$n")
		c1=$(cpu_ticks "${PID[$b]}")
		cell="p${parts}-s${size}"
		record cons "$b" "$cell" "$rep.$acks" rps "$(jq .records_per_sec <<<"$j")"
		record cons "$b" "$cell" "$rep.$acks" mbps "$(jq .mb_per_sec <<<"$j")"
		record cons "$b" "$cell" "$rep.$acks" cpu_us "$(awk -v d=$((c1 - c0)) -v hz="$HZ" -v n="$n" 'BEGIN{print d/hz*1e6/n}')"
	fi
	"$SAMSA_BIN" -b "${ADDR[$b]}" topic delete "$topic" >/dev/null
	log "$section $b $cell rep $rep done"
}

# order REP: the brokers in alternating order.
order() { if (($1 % 2)); then echo samsa kfake; else echo kfake samsa; fi; }

# --- brokers --------------------------------------------------------------
mkdir -p "$WORK/data"
"$SAMSA_BIN" serve --override log.dirs="$WORK/data" \
	--override listeners=PLAINTEXT://${ADDR[samsa]} --override admin.listener= \
	>"$WORK/samsa.log" 2>&1 &
PID[samsa]=$!
"$SAMSA_BIN" dev kfake --listen "${ADDR[kfake]}" >"$WORK/kfake.log" 2>&1 &
PID[kfake]=$!
wait_ready 127.0.0.1 "$SAMSA_PORT"
wait_ready 127.0.0.1 "$KFAKE_PORT"
log "brokers up: samsa pid ${PID[samsa]}, kfake pid ${PID[kfake]}, work dir $WORK"

# Warm both brokers (page cache, heap, connection paths).
for b in samsa kfake; do
	perf "$b" produce --topic pc-warm --partitions 8 --records 200000 --record-size 1024 >/dev/null
	perf "$b" consume --topic pc-warm --records 200000 >/dev/null
	"$SAMSA_BIN" -b "${ADDR[$b]}" topic delete pc-warm >/dev/null
done

# --- produce / consume matrix ---------------------------------------------
for ((rep = 1; rep <= REPS; rep++)); do
	for parts in 1 8; do
		for size in 100 1024; do
			for acks in 1 all; do
				for b in $(order $((rep + parts + size))); do
					one_run "$b" "$parts" "$size" "$acks" "$rep"
				done
			done
		done
	done
done

# --- idempotent producer on/off, acks=all -------------------------------------
# kgo keeps one produce request in flight per broker without idempotence and
# up to five with it, so this also shows how much each broker gains from
# pipelined requests.
for ((rep = 1; rep <= REPS; rep++)); do
	for parts in 1 8; do
		for size in 100 1024; do
			for idem in on off; do
				[[ $((rep % 2)) == 0 ]] && idem=$([[ $idem == on ]] && echo off || echo on)
				for b in $(order "$rep"); do
					one_run "$b" "$parts" "$size" all "$rep" "$idem"
				done
			done
		done
	done
done

# --- end-to-end latency -----------------------------------------------------
for ((rep = 1; rep <= REPS; rep++)); do
	for b in $(order "$rep"); do
		topic="pc-e2e-r$rep-$RANDOM"
		j=$(perf "$b" e2e --topic "$topic" --rate "$E2E_RATE" --record-size 1024 --duration "$E2E_DUR")
		record e2e "$b" r${E2E_RATE}-s1024 "$rep" p50 "$(jq .e2e_latency_ms.p50 <<<"$j")"
		record e2e "$b" r${E2E_RATE}-s1024 "$rep" p99 "$(jq .e2e_latency_ms.p99 <<<"$j")"
		record e2e "$b" r${E2E_RATE}-s1024 "$rep" prod_p99 "$(jq .latency_ms.p99 <<<"$j")"
		record e2e "$b" r${E2E_RATE}-s1024 "$rep" rps "$(jq .records_per_sec <<<"$j")"
		"$SAMSA_BIN" -b "${ADDR[$b]}" topic delete "$topic" >/dev/null
		log "e2e $b rep $rep done"
	done
done

# --- samsa cold start -------------------------------------------------------
for ((rep = 1; rep <= STARTUP_REPS; rep++)); do
	d=$WORK/start-$rep
	rm -rf "$d"
	mkdir -p "$d"
	t0=$(now_ns)
	"$SAMSA_BIN" serve --override log.dirs="$d/data" \
		--override listeners=PLAINTEXT://127.0.0.1:$START_PORT --override admin.listener= \
		>"$d/samsa.log" 2>&1 &
	sp=$!
	until probe 127.0.0.1 "$START_PORT"; do
		kill -0 "$sp" 2>/dev/null || { echo "perf-compare: samsa exited, see $d/samsa.log" >&2; exit 1; }
	done
	t1=$(now_ns)
	record start samsa cold "$rep" ms "$(((t1 - t0) / 1000000))"
	kill "$sp"
	wait "$sp" || true
	rm -rf "$d/data"
done

# --- tables -------------------------------------------------------------------
# med SECTION BROKER CELL METRIC: median over reps.
med() {
	awk -F'\t' -v s="$1" -v b="$2" -v c="$3" -v m="$4" \
		'$1==s && $2==b && $3==c && $5==m {print $6}' "$RES" | sort -g |
		awk '{v[NR]=$1} END{if(NR==0){print "nan"; exit} if(NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if(b+0==0) print "nan"; else printf "%.2f", a/b}'; }
f() { awk -v v="$1" -v p="${2:-1}" 'BEGIN{printf "%.*f", p, v}'; }

echo
echo "## produce (median of $REPS; rec/s, MB/s, latency ms, broker CPU us/record)"
printf '%-14s | %10s %10s %7s | %7s %7s | %7s %7s | %7s %7s | %6s %6s\n' cell \
	samsa_rps kfake_rps ratio s_MB/s k_MB/s s_p50 k_p50 s_p99 k_p99 s_cpu k_cpu
for parts in 1 8; do for size in 100 1024; do for acks in 1 all; do
	c="p${parts}-s${size}-a${acks}"
	sr=$(med prod samsa "$c" rps) kr=$(med prod kfake "$c" rps)
	sc=$(med prod samsa "$c" cpu_us) kc=$(med prod kfake "$c" cpu_us)
	printf '%-14s | %10.0f %10.0f %7s | %7s %7s | %7s %7s | %7s %7s | %6s %6s  cpu ratio %s\n' "$c" \
		"$sr" "$kr" "$(ratio "$sr" "$kr")" \
		"$(f "$(med prod samsa "$c" mbps)")" "$(f "$(med prod kfake "$c" mbps)")" \
		"$(f "$(med prod samsa "$c" p50)")" "$(f "$(med prod kfake "$c" p50)")" \
		"$(f "$(med prod samsa "$c" p99)")" "$(f "$(med prod kfake "$c" p99)")" \
		"$(f "$sc" 2)" "$(f "$kc" 2)" "$(ratio "$sc" "$kc")"
done; done; done

echo
echo "## consume (median of $((REPS * 2)): each produced topic read once; rec/s, MB/s, broker CPU us/record)"
printf '%-10s | %10s %10s %7s | %7s %7s | %6s %6s %7s\n' cell samsa_rps kfake_rps ratio s_MB/s k_MB/s s_cpu k_cpu ratio
for parts in 1 8; do for size in 100 1024; do
	c="p${parts}-s${size}"
	sr=$(med cons samsa "$c" rps) kr=$(med cons kfake "$c" rps)
	sc=$(med cons samsa "$c" cpu_us) kc=$(med cons kfake "$c" cpu_us)
	printf '%-10s | %10.0f %10.0f %7s | %7s %7s | %6s %6s %7s\n' "$c" "$sr" "$kr" "$(ratio "$sr" "$kr")" \
		"$(f "$(med cons samsa "$c" mbps)")" "$(f "$(med cons kfake "$c" mbps)")" \
		"$(f "$sc" 2)" "$(f "$kc" 2)" "$(ratio "$sc" "$kc")"
done; done

echo
echo "## samsa group commit: acks=all / acks=1 produce rec/s"
for parts in 1 8; do for size in 100 1024; do
	c="p${parts}-s${size}"
	printf '%-10s samsa %s   kfake %s\n' "$c" \
		"$(ratio "$(med prod samsa "$c-aall" rps)" "$(med prod samsa "$c-a1" rps)")" \
		"$(ratio "$(med prod kfake "$c-aall" rps)" "$(med prod kfake "$c-a1" rps)")"
done; done

echo
echo "## idempotent producer: on / off rec/s (acks=all, median of $REPS)"
for parts in 1 8; do for size in 100 1024; do for b in samsa kfake; do
	on=$(med idem "$b" "p$parts-s$size-on" rps) off=$(med idem "$b" "p$parts-s$size-off" rps)
	printf '%-6s p%s %5s B  on %10.0f  off %10.0f  ratio %s  cpu us/rec on %s off %s\n' "$b" "$parts" "$size" "$on" "$off" \
		"$(ratio "$on" "$off")" "$(f "$(med idem "$b" "p$parts-s$size-on" cpu_us)" 2)" "$(f "$(med idem "$b" "p$parts-s$size-off" cpu_us)" 2)"
done; done; done
echo "## idempotent produce (5 in flight), samsa / kfake rec/s"
for parts in 1 8; do for size in 100 1024; do
	printf 'p%s %5s B  %s\n' "$parts" "$size" \
		"$(ratio "$(med idem samsa "p$parts-s$size-on" rps)" "$(med idem kfake "p$parts-s$size-on" rps)")"
done; done

echo
echo "## end-to-end latency, $E2E_RATE rec/s of 1 KiB, acks=all, $E2E_DUR (median of $REPS; ms)"
for b in samsa kfake; do
	c=r${E2E_RATE}-s1024
	printf '%-6s e2e p50 %7s  e2e p99 %7s  produce p99 %7s  rec/s %8.0f\n' "$b" \
		"$(f "$(med e2e "$b" "$c" p50)" 2)" "$(f "$(med e2e "$b" "$c" p99)" 2)" \
		"$(f "$(med e2e "$b" "$c" prod_p99)" 2)" "$(med e2e "$b" "$c" rps)"
done

echo
echo "## samsa cold start to first ApiVersions answer (ms, $STARTUP_REPS runs)"
printf 'runs: %s  median: %s\n' "$(awk -F'\t' '$1=="start"{printf "%s ", $6}' "$RES")" "$(med start samsa cold ms)"
echo
echo "raw results: $RES"

# Every target is plain go commands on one line; run them directly if you prefer.
# make test first runs scripts/test-deps.sh, which installs kcat,
# confluent-kafka-python, prometheus and chromium (apt-get, as root or with
# sudo) when they are missing.
# test/e2e and test/chaos run with -count=1: they build and run the samsa
# binary, which go test's result cache does not see change; and with a
# 20 minute timeout, since the chaos package runs its scenarios one after
# another and on a loaded 2-core machine comes close to go test's default
# of 10 minutes.
.PHONY: build run test race verify fuzz bench e2e console-screenshots etl ops scale chaos soak cluster docker-image docker-up docker-down docker-test docker-test-secure docker-test-all

# build/samsa, static, with its version and commit linked in (samsa version).
build:
	scripts/build.sh

run:
	go run ./cmd/samsa serve

test:
	scripts/test-deps.sh && CI=1 go vet ./... && CI=1 go test ./internal/... ./cmd/... && CI=1 go test -count=1 -timeout 20m ./test/... && CI=1 go test -race ./internal/...

race:
	go test -race ./internal/...

verify:
	test -z "$$(gofmt -l .)" && go vet ./... && go mod tidy -diff

fuzz:
	go test -run='^$$' -fuzz=FuzzValidate -fuzztime=30s ./internal/record
	go test -run='^$$' -fuzz=FuzzRequest -fuzztime=30s ./internal/server
	go test -run='^$$' -fuzz=FuzzAuthPhase -fuzztime=30s ./internal/server

bench:
	go test -run='^$$' -bench=. -benchmem ./internal/storage ./internal/record
	go test -run='^$$' -bench='TransactionalProduce|ReadCommittedConsume' -benchtime=10s ./internal/broker

e2e:
	go test -count=1 ./test/e2e/...

# Refresh the screenshots of docs/console.md with the console's browser test.
console-screenshots:
	SAMSA_CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console go test -count=1 -run TestConsoleInChromium ./test/e2e

# The KIP-848 ETL run at its full 500,000 records under the race detector
# (the normal suite runs it at 500,000 without, 50,000 with -race).
etl:
	SAMSA_ETL_RECORDS=500000 go test -race -count=1 -v -run TestConsumerGroupETL ./internal/broker/

# The procedures of docs/operations.md, the measurements too.
ops:
	SAMSA_OPS=1 go test -count=1 -v -run TestOps ./test/e2e/

# One broker with 10,000 partitions, then with 10,000 idle and 1,000 active
# client connections, and three brokers with 30,000 partition replicas:
# memory, descriptors, startup and
# recovery times (docs/performance.md, Scale). A few minutes.
scale:
	SAMSA_SCALE=1 SAMSA_SCALE_DATA_MIB=10240 go test -count=1 -v -timeout 60m -run TestScale ./test/e2e/ ./test/chaos/

chaos:
	SAMSA_CHAOS_LONG=1 go test -v -timeout 60m ./test/chaos/

# One hour of mixed load and faults, then the checks (docs/reliability.md,
# Soak); SAMSA_SOAK_DURATION=10m for a shorter one.
soak:
	SAMSA_SOAK=1 go test -count=1 -v -timeout 120m -run '^TestSoak$$' ./test/chaos/

# A three-broker cluster as local processes; Ctrl-C stops it.
cluster:
	scripts/cluster.sh

# The image docker-image builds and docker-up runs (SAMSA_IMAGE in the
# compose files), and docker compose where the plugin is there, else
# docker-compose.
IMAGE ?= samsa:local
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo docker compose || echo docker-compose)

# build/samsa (scripts/build.sh) and the FROM scratch image $(IMAGE),
# labelled with its version and commit.
docker-image:
	scripts/docker-image.sh $(IMAGE)

# From a clean clone: the image, then the three-broker cluster of
# docker-compose.yml with the host ports of docker-compose.override.yml
# (Kafka on localhost:9092-9094). docker-down removes it but keeps its
# volumes; $(COMPOSE) down -v removes those too.
docker-up:
	scripts/docker-image.sh $(IMAGE) && SAMSA_IMAGE=$(IMAGE) $(COMPOSE) up -d

docker-down:
	SAMSA_IMAGE=$(IMAGE) $(COMPOSE) down

# Need a docker engine; not part of make test (CI runs docker-test-all
# after it, in .ci/run). docker-test: the plain cluster of
# docker-compose.yml; docker-test-secure: with docker-compose.secure.yml
# (SASL_SSL); docker-test-all: both in one run.
docker-test:
	scripts/docker-test.sh

docker-test-secure:
	MODES=secure scripts/docker-test.sh

docker-test-all:
	MODES="plain secure" scripts/docker-test.sh

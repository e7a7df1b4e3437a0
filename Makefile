# Every target is plain go commands on one line; run them directly if you prefer.
# make test first runs scripts/test-deps.sh, which installs kcat,
# confluent-kafka-python and prometheus (apt-get, as root or with sudo) when
# they are missing.
# test/e2e and test/chaos run with -count=1: they build and run the samsa
# binary, which go test's result cache does not see change.
.PHONY: run test race verify fuzz bench e2e ops chaos cluster docker-image docker-test docker-test-secure docker-test-all

run:
	go run ./cmd/samsa serve

test:
	scripts/test-deps.sh && CI=1 go vet ./... && CI=1 go test ./internal/... ./cmd/... && CI=1 go test -count=1 ./test/... && CI=1 go test -race ./internal/...

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

e2e:
	go test -count=1 ./test/e2e/...

# The procedures of docs/operations.md, the measurements too.
ops:
	SAMSA_OPS=1 go test -count=1 -v -run TestOps ./test/e2e/

chaos:
	SAMSA_CHAOS_LONG=1 go test -v -timeout 60m ./test/chaos/

# A three-broker cluster as local processes; Ctrl-C stops it.
cluster:
	scripts/cluster.sh

# build/samsa (static) and the FROM scratch image samsa:local.
docker-image:
	CGO_ENABLED=0 go build -trimpath -o build/samsa ./cmd/samsa && mkdir -p build/image/data build/image/tmp && docker build -t samsa:local .

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

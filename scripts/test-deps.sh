#!/usr/bin/env bash
# Installs the client tools the end-to-end tests drive, when they are
# missing: kcat, librdkafka through confluent-kafka-python, kafka-python
# (old protocol versions), Prometheus
# (promtool and the server, for the metrics tests) and Chromium (the web
# console's browser test drives it headless). On Debian
# or Ubuntu as root (or with sudo) it installs them with apt-get; anywhere
# else it says what to install and fails, so that `make test` never runs
# the end-to-end suite half-equipped. `make test` and .ci/run call it.
#
# Set SAMSA_TEST_DEPS=skip to run the tests without checking (the tests
# that need a missing tool then fail when CI is set, and skip otherwise).
set -euo pipefail

[ "${SAMSA_TEST_DEPS:-}" = skip ] && exit 0

packages=(kcat python3-confluent-kafka python3-kafka prometheus chromium)

# The tests look for a python3 with the module in PATH, then in
# /usr/bin and /usr/local/bin (Debian's package installs for /usr/bin's).
have_python() {
	local py
	for py in python3 /usr/bin/python3 /usr/local/bin/python3; do
		if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import confluent_kafka, kafka' >/dev/null 2>&1; then
			return 0
		fi
	done
	return 1
}

have_all() {
	command -v kcat >/dev/null 2>&1 && have_python &&
		command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 &&
		command -v chromium >/dev/null 2>&1
}

have_all && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	fi
fi
if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; }; then
	echo "test-deps: installing ${packages[*]} with apt-get" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >&2
	have_all && exit 0
	echo "test-deps: apt-get ran, but kcat, python3's confluent_kafka or kafka, prometheus or chromium is still missing" >&2
	exit 1
fi

cat >&2 <<MSG
test-deps: the end-to-end tests need kcat, confluent-kafka-python
(librdkafka), kafka-python, Prometheus (promtool) and Chromium, and this script can install them only on Debian or Ubuntu
as root or with passwordless sudo. Install them, then run make test again:

  Debian/Ubuntu:  sudo apt-get install -y ${packages[*]}
  macOS:          brew install kcat librdkafka prometheus chromium && pip3 install confluent-kafka kafka-python

or run the tests without them: SAMSA_TEST_DEPS=skip make test
MSG
exit 1

#!/usr/bin/env bash
# build.sh: build the static samsa binary with its version and commit
# linked in, which samsa version (and the image's labels) report.
#
# Usage: scripts/build.sh [OUT]     (OUT relative to the repository root;
#                                    default build/samsa)
#
# Environment (optional):
#   VERSION  the version (git describe --tags --always --dirty)
#   COMMIT   the commit (git rev-parse HEAD, with -dirty appended when
#            tracked files differ from it)
# Outside a git tree both stay empty, and samsa version reports what the
# Go toolchain recorded instead. go's own variables (GOOS, GOARCH,
# GOFLAGS) apply as usual; cgo is off, so the binary runs FROM scratch.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-build/samsa}
if [[ -z ${VERSION+set} ]]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null || true)
fi
if [[ -z ${COMMIT+set} ]]; then
	COMMIT=$(git rev-parse HEAD 2>/dev/null || true)
	if [[ -n $COMMIT ]] && ! git diff --quiet HEAD -- 2>/dev/null; then
		COMMIT+=-dirty
	fi
fi
CGO_ENABLED=0 exec go build -trimpath \
	-ldflags "-X samsa/internal/cli.version=$VERSION -X samsa/internal/cli.commit=$COMMIT" \
	-o "$OUT" ./cmd/samsa

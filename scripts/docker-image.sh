#!/usr/bin/env bash
# docker-image.sh: build build/samsa (scripts/build.sh) and the FROM
# scratch image around it, labelled with its version, commit, build time
# and source. make docker-image and make docker-up run it;
# scripts/docker-test.sh builds its image with it too.
#
# Usage: scripts/docker-image.sh [IMAGE]   (default samsa:local)
#
# It stages what the Dockerfile copies besides the binary: the empty
# directories build/image/data and build/image/tmp, and the marker file
# build/image/run-make-docker-image-first, which the Dockerfile copies
# first so that a plain `docker build .` on a tree without them fails
# with an error naming the command to run (see the Dockerfile).
#
# Environment (optional): VERSION and COMMIT as for scripts/build.sh;
# SOURCE, the repository URL for org.opencontainers.image.source (the
# git remote origin, without any user or password in it; empty if there
# is none); DOCKER_BUILD_FLAGS, more flags for docker build (-q).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${1:-samsa:local}
if [[ -z ${VERSION+set} ]]; then
	VERSION=$(git describe --tags --always --dirty 2>/dev/null || true)
fi
REVISION=$(git rev-parse HEAD 2>/dev/null || true)
if [[ -z ${SOURCE+set} ]]; then
	SOURCE=$(git remote get-url origin 2>/dev/null | sed -E 's#^([a-z+]+://)[^@/]*@#\1#' || true)
fi
export VERSION
scripts/build.sh build/samsa

mkdir -p build/image/data build/image/tmp
cat >build/image/run-make-docker-image-first <<'MARKER'
Written by scripts/docker-image.sh (make docker-image). The Dockerfile
copies this file first, so that docker build on a tree without it stops
with an error naming it: build the image with make docker-image.
MARKER

# shellcheck disable=SC2086 # DOCKER_BUILD_FLAGS is a list of flags
docker build ${DOCKER_BUILD_FLAGS:-} \
	--build-arg VERSION="${VERSION:-devel}" \
	--build-arg REVISION="${REVISION:-unknown}" \
	--build-arg CREATED="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	--build-arg SOURCE="$SOURCE" \
	-t "$IMAGE" .

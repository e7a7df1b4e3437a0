# samsa image: the static binary and nothing else. There is no base image
# to pull, so the binary is built on the host first. Build the image with
#
#   make docker-image            # or: scripts/docker-image.sh [IMAGE]
#
# which builds build/samsa with its version and commit linked in
# (scripts/build.sh), creates the two empty directories copied below,
# writes build/image/run-make-docker-image-first and runs docker build
# with the label arguments below. `make docker-up` also starts the
# cluster of docker-compose.yml.
#
# Run one broker reachable from the host on localhost:9092:
#
#   docker run --rm -p 9092:9092 -p 9080:9080 -v samsa-data:/data samsa:local
#
# Anything after the image name replaces CMD below: give every setting you
# need as --override name=value (docker-compose.yml does so for a cluster).
FROM scratch

# The marker comes first, and only so that a build on a tree where make
# docker-image has not run (a plain `docker build .`, or compose's
# `build:`) fails at once with an error whose path says what to do:
#
#   COPY failed: file not found in build context or excluded by
#   .dockerignore: stat build/image/run-make-docker-image-first: file does not exist
#
# scratch has no shell to RUN a check in, and the classic builder's error
# for a missing source names its path and nothing else; build/samsa
# missing would not say how to make it, and a binary built by hand would
# lack the version that make docker-image links in. The file itself is
# three lines of text in /tmp.
#
# scratch has no directories at all. /data holds the log dir, the embedded
# etcd's data and its unix socket (/data/etcd.sock, well under the 108-byte
# socket path limit); /tmp is there for anything that asks for a temp dir.
# Both belong to the unprivileged user the broker runs as, so a new named
# volume mounted on /data starts out writable by it.
COPY --chown=65532:65532 build/image/run-make-docker-image-first build/image/tmp/ /tmp/
COPY --chown=65532:65532 build/image/data /data
COPY build/samsa /samsa

USER 65532:65532
WORKDIR /data

# Kafka listener, admin HTTP (/metrics, /healthz, /readyz), etcd client and
# etcd peer.
EXPOSE 9092 9080 2379 2380

# Healthy while /readyz on the default admin listener answers 200 (scratch
# has no curl; samsa healthcheck is one GET). A broker whose
# admin.listener is elsewhere needs its own healthcheck with --url. The
# start period covers a cluster's first start, which waits for an etcd
# quorum.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/samsa", "healthcheck", "--timeout", "3s"]

# OCI annotations; make docker-image passes the build arguments from git
# (describe, rev-parse HEAD, remote origin) and the build time.
ARG VERSION=devel
ARG REVISION=unknown
ARG CREATED=
ARG SOURCE=
LABEL org.opencontainers.image.title="samsa" \
      org.opencontainers.image.description="Kafka-compatible message broker" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"

ENTRYPOINT ["/samsa", "serve"]
# A single broker with its own embedded etcd. The listener binds every
# interface; clients are told localhost:9092, which is right for
# `docker run -p 9092:9092` on the same machine.
CMD ["--override", "log.dirs=/data", \
     "--override", "listeners=PLAINTEXT://0.0.0.0:9092", \
     "--override", "advertised.listeners=PLAINTEXT://localhost:9092", \
     "--override", "admin.listener=0.0.0.0:9080"]
# Last: with the classic builder every later step would run in a container
# that gets (and leaves behind) an anonymous volume for /data.
VOLUME /data

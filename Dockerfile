# samsa image: the static binary and nothing else. There is no base image
# to pull; build the binary and the empty directories on the host first
# (`make docker-image` does both):
#
#   CGO_ENABLED=0 go build -trimpath -o build/samsa ./cmd/samsa
#   mkdir -p build/image/data build/image/tmp
#   docker build -t samsa:local .
#
# Run one broker reachable from the host on localhost:9092:
#
#   docker run --rm -p 9092:9092 -p 9080:9080 -v samsa-data:/data samsa:local
#
# Anything after the image name replaces CMD below: give every setting you
# need as --override name=value (docker-compose.yml does so for a cluster).
FROM scratch

# scratch has no directories at all. /data holds the log dir, the embedded
# etcd's data and its unix socket (/data/etcd.sock, well under the 108-byte
# socket path limit); /tmp is there for anything that asks for a temp dir.
# Both belong to the unprivileged user the broker runs as, so a new named
# volume mounted on /data starts out writable by it.
COPY --chown=65532:65532 build/image/data /data
COPY --chown=65532:65532 build/image/tmp /tmp
COPY build/samsa /samsa

USER 65532:65532
WORKDIR /data

# Kafka listener, admin HTTP (/metrics, /healthz, /readyz), etcd client and
# etcd peer.
EXPOSE 9092 9080 2379 2380

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

package node

import (
	"log/slog"

	"samsa/internal/storage"
)

// fdHeadroom is what the broker needs beyond one descriptor per segment:
// etcd, listeners, client and replica connections, index files being
// written.
const fdHeadroom = 1024

// checkOpenFileLimit warns when the descriptor limit leaves less than
// fdHeadroom beyond the segments the log dir holds open. A broker that
// reaches the limit refuses new connections (the listener retries) and
// cannot create partitions or roll segments (the log dir goes offline):
// the warning says so before it happens.
func checkOpenFileLimit(log *slog.Logger, logs *storage.LogDirs) {
	limit := openFileLimit()
	if limit == 0 {
		return
	}
	segments := 0
	for _, l := range logs.Logs() {
		segments += l.SegmentCount()
	}
	if need := uint64(segments) + fdHeadroom; limit < need {
		log.Warn("open file limit is low for the hosted segments: raise ulimit -n (systemd LimitNOFILE=)",
			"limit", limit, "segments", segments, "want_at_least", need)
	}
}

package broker

// ApiVersions: v0-3
//
// * v0: the served version ranges (versions.go).
// * v1: ThrottleMillis.
// * v3: flexible versions; ClientSoftwareName/Version in the request
//   (KIP-511), accepted and not checked. SupportedFeatures and
//   FinalizedFeatures (KIP-584) carry one feature, transaction.version:
//   supported 0-2, finalized at the broker's transaction.version when
//   that is above 0 (Kafka lists no finalized feature at level 0). A
//   client at level 2 uses transaction version 2 (KIP-890 part 2: Produce
//   v12 adds partitions itself, TxnOffsetCommit v5 adds the group's
//   partition, EndTxn v5 bumps the epoch). samsa's level is a broker
//   config rather than a cluster-wide feature Kafka finalizes through
//   its controller; brokers that disagree are harmless, because every
//   broker serves both transaction versions by request version.
//
// A request above v3 gets a v0 response carrying UNSUPPORTED_VERSION and the
// ranges, so the client can retry at a version both sides know (the server
// package encodes it at v0).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The transaction.version feature (KIP-584 feature flags, KIP-890 part 2).
const (
	featureTransactionVersion       = "transaction.version"
	maxTransactionVersion     int16 = 2
)

func (b *Broker) handleApiVersions(req *kmsg.ApiVersionsRequest, unsupported bool) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if unsupported {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = apiVersionKeys()
	resp.FinalizedFeaturesEpoch = -1
	if resp.GetVersion() >= 3 {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = featureTransactionVersion, 0, maxTransactionVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		resp.FinalizedFeaturesEpoch = 0
		if lvl := b.cfg.TransactionVersion; lvl > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = featureTransactionVersion, lvl, lvl
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	return resp
}

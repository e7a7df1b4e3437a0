package broker

// ApiVersions: v0-3
//
// * v0: the served version ranges (versions.go).
// * v1: ThrottleMillis.
// * v3: flexible versions; ClientSoftwareName/Version in the request
//   (KIP-511), accepted and not checked; SupportedFeatures and
//   FinalizedFeatures are left empty: samsa has no feature flags.
//
// A request above v3 gets a v0 response carrying UNSUPPORTED_VERSION and the
// ranges, so the client can retry at a version both sides know (the server
// package encodes it at v0).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleApiVersions(req *kmsg.ApiVersionsRequest, unsupported bool) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if unsupported {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = apiVersionKeys()
	resp.FinalizedFeaturesEpoch = -1
	return resp
}

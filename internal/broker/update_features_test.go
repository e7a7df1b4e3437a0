package broker_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestUpdateFeaturesKeepsTransactionVersionAtTheBrokerConfig: an update
// to the broker's transaction.version level succeeds, any other is
// INVALID_UPDATE_VERSION (the level is a broker config), with or without
// ValidateOnly; updates Kafka refuses are refused alike; one failed update
// fails them all; and ApiVersions still finalizes the configured level.
//
// Reference: KIP-584, KIP-778; Kafka FeatureControlManager.updateFeature,
// UpdateFeaturesResponse.createWithErrors.
func TestUpdateFeaturesKeepsTransactionVersionAtTheBrokerConfig(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, "transaction.version=1")
	type update struct {
		feature   string
		level     int16
		upgrade   int8
		downgrade bool // v0
	}
	send := func(v int16, validateOnly bool, us ...update) *kmsg.UpdateFeaturesResponse {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.ValidateOnly = validateOnly
		for _, u := range us {
			fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = u.feature, u.level, u.upgrade, u.downgrade
			req.FeatureUpdates = append(req.FeatureUpdates, fu)
		}
		resp := request[*kmsg.UpdateFeaturesResponse](t, pinned(t, b, 57, v), req)
		if resp.Version != v {
			t.Fatalf("answered at v%d, want v%d", resp.Version, v)
		}
		return resp
	}
	const tv = "transaction.version"
	for _, c := range []struct {
		name     string
		v        int16
		validate bool
		updates  []update
		want     *kerr.Error
		inMsg    string
	}{
		{"same level", 1, false, []update{{tv, 1, 1, false}}, nil, ""},
		{"same level, validate only", 1, true, []update{{tv, 1, 1, false}}, nil, ""},
		{"same level v0", 0, false, []update{{tv, 1, 0, false}}, nil, ""},
		{"same level v2", 2, false, []update{{tv, 1, 1, false}}, nil, ""},
		{"upgrade", 1, false, []update{{tv, 2, 1, false}}, kerr.InvalidUpdateVersion, "broker config"},
		{"upgrade, validate only", 1, true, []update{{tv, 2, 1, false}}, kerr.InvalidUpdateVersion, "broker config"},
		{"safe downgrade", 1, false, []update{{tv, 0, 2, false}}, kerr.InvalidUpdateVersion, "broker config"},
		{"downgrade typed as upgrade", 1, false, []update{{tv, 0, 1, false}}, kerr.InvalidUpdateVersion, "downgrade"},
		{"downgrade v0 without AllowDowngrade", 0, false, []update{{tv, 0, 0, false}}, kerr.InvalidUpdateVersion, "downgrade"},
		{"downgrade raising the level", 1, false, []update{{tv, 2, 2, false}}, kerr.InvalidUpdateVersion, "raise"},
		{"level above 2", 1, false, []update{{tv, 3, 1, false}}, kerr.InvalidUpdateVersion, "0 to 2"},
		{"negative level", 1, false, []update{{tv, -1, 1, false}}, kerr.InvalidUpdateVersion, "below 0"},
		{"unknown upgrade type", 1, false, []update{{tv, 1, 0, false}}, kerr.InvalidUpdateVersion, "upgrade type"},
		{"unknown feature", 1, false, []update{{"group.version", 1, 1, false}}, kerr.InvalidUpdateVersion, "not support"},
		{"one bad update fails all", 1, false, []update{{tv, 1, 1, false}, {"share.version", 1, 1, false}}, kerr.InvalidUpdateVersion, "share.version"},
		{"v2 names the feature", 2, false, []update{{"share.version", 1, 1, false}}, kerr.InvalidUpdateVersion, "share.version:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := send(c.v, c.validate, c.updates...)
			want := int16(0)
			if c.want != nil {
				want = c.want.Code
			}
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			if resp.ErrorCode != want || !strings.Contains(msg, c.inMsg) {
				t.Fatalf("%v %q, want %v with %q", kerr.ErrorForCode(resp.ErrorCode), msg, kerr.ErrorForCode(want), c.inMsg)
			}
			switch {
			case want != 0 || c.v >= 2:
				if len(resp.Results) != 0 {
					t.Fatalf("results %+v, want none", resp.Results)
				}
			case len(resp.Results) != len(c.updates):
				t.Fatalf("%d results, want %d", len(resp.Results), len(c.updates))
			default:
				for _, r := range resp.Results {
					if r.ErrorCode != 0 {
						t.Fatalf("result %s: %v", r.Feature, kerr.ErrorForCode(r.ErrorCode))
					}
				}
			}
		})
	}
	versions := request[*kmsg.ApiVersionsResponse](t, b.Client(), kmsg.NewPtrApiVersionsRequest())
	if len(versions.FinalizedFeatures) != 1 || versions.FinalizedFeatures[0].Name != tv || versions.FinalizedFeatures[0].MaxVersionLevel != 1 {
		t.Fatalf("finalized features after the updates: %+v, want transaction.version 1", versions.FinalizedFeatures)
	}
}

package broker

// UpdateFeatures: v0-2 (KIP-584; v1 UpgradeType and ValidateOnly,
// KIP-778; v2 no per-feature results)
//
// samsa's one feature is transaction.version (18_api_versions.go), and
// its level is the broker's read-only transaction.version config, not a
// level a controller finalizes. So UpdateFeatures checks each update as
// Kafka's FeatureControlManager.updateFeature does and then answers:
//
//   - An update that keeps transaction.version at the broker's level: no
//     error (nothing to change), as Kafka answers an update to the
//     finalized level.
//   - Any other valid update: INVALID_UPDATE_VERSION, whose message says
//     the level is the broker config transaction.version. samsa cannot
//     finalize it for the cluster, and ValidateOnly gets the same answer,
//     so that it predicts the real one.
//   - Refused as by Kafka, with INVALID_UPDATE_VERSION: an unknown upgrade
//     type (v1+, 0 or above 3); a feature other than transaction.version;
//     a level below 0 or above 2; a level below the current one with
//     UpgradeType UPGRADE (v0: AllowDowngrade false); a level above the
//     current one with a downgrade type.
//
// As in Kafka 4 (UpdateFeaturesResponse.createWithErrors), the updates
// are all or nothing: the first update that fails gives the top-level
// error and message, and no results; when none fails, v0-1 list every
// feature with no error. v2 has no results; its message names the
// failed feature first, as Kafka's v2 message does.
//
// The request needs ALTER on the cluster, else the answer is
// CLUSTER_AUTHORIZATION_FAILED (Reference: ControllerApis.handleUpdateFeatures;
// authz_apis.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature upgrade types (KIP-778, UpdateFeatures v1+).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

func (b *Broker) handleUpdateFeatures(req *kmsg.UpdateFeaturesRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	for _, u := range req.FeatureUpdates {
		msg := b.checkFeatureUpdate(req.Version, u)
		if msg == "" {
			continue
		}
		resp.ErrorCode = kerr.InvalidUpdateVersion.Code
		if req.Version >= 2 {
			msg = fmt.Sprintf("%s:%s (%s)", u.Feature, "InvalidUpdateVersionException", msg)
		}
		resp.ErrorMessage = &msg
		return resp
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			resp.Results = append(resp.Results, r)
		}
	}
	return resp
}

// checkFeatureUpdate returns why update u cannot be applied, or "" when
// it leaves the feature at its level.
func (b *Broker) checkFeatureUpdate(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate) string {
	typ := u.UpgradeType
	if version == 0 {
		typ = upgradeTypeUpgrade
		if u.AllowDowngrade {
			typ = upgradeTypeSafeDowngrade
		}
	}
	invalid := func(format string, args ...any) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. ", u.MaxVersionLevel, u.Feature) + fmt.Sprintf(format, args...)
	}
	current := b.cfg.TransactionVersion
	switch level := u.MaxVersionLevel; {
	case typ < upgradeTypeUpgrade || typ > upgradeTypeUnsafeDowngrade:
		return invalid("The upgrade type %d is not known.", typ)
	case level < 0:
		return invalid("A feature level cannot be below 0.")
	case u.Feature != featureTransactionVersion:
		return invalid("The broker does not support this feature.")
	case level > maxTransactionVersion:
		return invalid("The broker supports levels 0 to %d.", maxTransactionVersion)
	case level < current && typ == upgradeTypeUpgrade:
		return invalid("A downgrade needs the upgrade type safe or unsafe downgrade.")
	case level > current && typ != upgradeTypeUpgrade:
		return invalid("A downgrade cannot raise the level.")
	case level != current:
		return invalid("samsa's %s level is the read-only broker config %s (%d on this broker); change it there and restart the brokers.",
			featureTransactionVersion, featureTransactionVersion, current)
	}
	return ""
}

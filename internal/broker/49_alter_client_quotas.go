package broker

// AlterClientQuotas: v0-1
//
// * v0: set or remove quota keys of user, client-id, user+client-id and ip
//   entities; validate_only checks without writing (KIP-546).
// * v1: flexible versions.
//
// Requires ALTER_CONFIGS on the cluster: without it every entry gets
// CLUSTER_AUTHORIZATION_FAILED and nothing changes. Each entry is validated
// on its own, as Kafka's ClientQuotaControlManager does, and an invalid one
// gets INVALID_REQUEST with a message while the others go on: an empty,
// repeated or unknown entity type, an empty name, ip combined with user or
// client-id, an ip that is not an address, a key unknown or not allowed for
// the entity (connection_creation_rate only on ips, the others only on users
// and client ids), a key given twice, a value that is not a whole number for
// producer_byte_rate, consumer_byte_rate and connection_creation_rate.
//
// The valid entries are written together in one etcd transaction, so they
// take effect at once or (a store failure, which every valid entry then
// reports) not at all; the response comes after this broker's image has
// them.
//
// Differences from Kafka:
//   - A value must be > 0 and finite: a zero quota would throttle for ever.
//     (Kafka does not check the sign.)
//   - Kafka accepts a resolvable host name as an ip entity; samsa takes
//     addresses only.
//   - An entity named by more than one entry fails in all of them with
//     INVALID_REQUEST, and none of its entries applies; the response has one
//     entry per request entry, in request order.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/quota"
	"samsa/internal/server"
)

// errDuplicateQuota reports an entity or a key given twice in one
// AlterClientQuotas request.
var errDuplicateQuota = errors.New("broker: quota entity or key given more than once")

func (b *Broker) handleAlterClientQuotas(ctx context.Context, c *server.Conn, req *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	resp.Entries = make([]kmsg.AlterClientQuotasResponseEntry, len(req.Entries))
	for i, e := range req.Entries {
		re := &resp.Entries[i]
		*re = kmsg.NewAlterClientQuotasResponseEntry()
		for _, comp := range e.Entity {
			rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rc.Type, rc.Name = comp.Type, comp.Name
			re.Entity = append(re.Entity, rc)
		}
	}
	fail := func(i int, err error) {
		resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = errCode(err).Code, errMessage(err)
	}
	if !b.authzFor(c).cluster(opAlterConfigs) {
		for i := range resp.Entries {
			resp.Entries[i].ErrorCode = kerr.ClusterAuthorizationFailed.Code
		}
		return resp
	}

	// Validate each entry against a scratch Config: Alter applies Kafka's
	// entity, key and value rules.
	edits := make([]cluster.QuotaEdit, len(req.Entries))
	valid := make([]bool, len(req.Entries))
	first := make(map[quota.Entity]int) // entity -> first entry naming it
	for i, e := range req.Entries {
		entity, edit, err := validateQuotaEntry(e)
		if err != nil {
			fail(i, err)
			continue
		}
		if j, dup := first[entity]; dup {
			err := fmt.Errorf("%w: entity %s", errDuplicateQuota, entity)
			fail(i, err)
			if valid[j] {
				fail(j, err)
			}
			valid[j] = false
			continue
		}
		first[entity] = i
		edits[i], valid[i] = edit, true
	}
	var apply []cluster.QuotaEdit
	var applied []int
	for i, ok := range valid {
		if ok {
			apply = append(apply, edits[i])
			applied = append(applied, i)
		}
	}
	if req.ValidateOnly || len(apply) == 0 {
		return resp
	}
	if err := b.cluster.AlterClientQuotas(ctx, apply); err != nil {
		for _, i := range applied {
			fail(i, err)
		}
	}
	return resp
}

// validateQuotaEntry checks one AlterClientQuotas entry and returns its
// entity and the edit that stores it.
func validateQuotaEntry(e kmsg.AlterClientQuotasRequestEntry) (quota.Entity, cluster.QuotaEdit, error) {
	comps := make([]quota.EntityComponent, len(e.Entity))
	for i, c := range e.Entity {
		comps[i] = quota.EntityComponent{Type: c.Type, Name: c.Name}
	}
	entity, err := quota.NewEntity(comps...)
	if err != nil {
		return entity, cluster.QuotaEdit{}, err
	}
	scratch := make(quota.Config)
	seen := make(map[string]bool, len(e.Ops))
	for _, op := range e.Ops {
		if seen[op.Key] {
			return entity, cluster.QuotaEdit{}, fmt.Errorf("%w: key %s for entity %s", errDuplicateQuota, op.Key, entity)
		}
		seen[op.Key] = true
		if err := scratch.Alter(entity, op.Key, op.Value, op.Remove); err != nil {
			return entity, cluster.QuotaEdit{}, err
		}
	}
	edit := cluster.QuotaEdit{Entity: entity.Key(), Set: map[string]float64{}}
	for _, op := range e.Ops {
		if op.Remove {
			edit.Remove = append(edit.Remove, op.Key)
		} else {
			edit.Set[op.Key] = scratch[entity][op.Key]
		}
	}
	return entity, edit, nil
}

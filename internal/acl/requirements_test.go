package acl

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAPIRequirementsCoverKafkaTable(t *testing.T) {
	// Reference: Kafka documentation, security, "Operations and Resources on Protocols".
	var want []int16
	for _, r := range [][2]int16{{0, 3}, {8, 24}, {28, 37}, {42, 51}, {57, 57}, {60, 61}, {65, 66}} {
		for k := r[0]; k <= r[1]; k++ {
			want = append(want, k)
		}
	}
	for _, k := range want {
		if _, ok := APIRequirements[k]; !ok {
			t.Errorf("API key %d missing", k)
		}
	}
	scopeType := map[Scope]kmsg.ACLResourceType{
		ScopeCluster: cluster, ScopeEachTopic: topic, ScopeAnyTopic: topic, ScopeGroup: group, ScopeEachGroup: group,
		ScopeEachListedGroup: group, ScopeTransactionalID: txnID, ScopeEachTransactionalID: txnID,
		ScopeEachListedTransactionalID: txnID, ScopeTokenOwner: kmsg.ACLResourceTypeUser, ScopeEachToken: kmsg.ACLResourceTypeDelegationToken,
	}
	for key, r := range APIRequirements {
		t.Run(r.Name, func(t *testing.T) {
			if r.Key != key || r.Name == "" {
				t.Fatalf("entry %d has Key %d Name %q", key, r.Key, r.Name)
			}
			if len(r.Checks) == 0 && r.Note == "" {
				t.Fatal("no checks and no note saying why")
			}
			for _, c := range r.Checks {
				if len(c.AnyOf) == 0 {
					t.Fatalf("check %+v has no requirement", c)
				}
				for _, q := range c.AnyOf {
					if !slices.Contains(SupportedOperations(q.ResourceType), q.Operation) {
						t.Errorf("%s on %s is not an operation of that resource type", q.Operation, q.ResourceType)
					}
					if rt, ok := scopeType[q.Scope]; !ok || rt != q.ResourceType {
						t.Errorf("scope %q used with %s", q.Scope, q.ResourceType)
					}
				}
			}
		})
	}
}

func TestSupportedOperationsIncludeAll(t *testing.T) {
	// Reference: Kafka AclEntry.supportedOperations and AclCommand.validateOperation.
	for rt := kmsg.ACLResourceTypeTopic; rt <= kmsg.ACLResourceTypeUser; rt++ {
		if !slices.Contains(SupportedOperations(rt), all) {
			t.Errorf("%s: ALL missing", rt)
		}
	}
	if SupportedOperations(kmsg.ACLResourceTypeAny) != nil {
		t.Error("ANY has operations")
	}
}

package acl

import "github.com/twmb/franz-go/pkg/kmsg"

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txnID   = kmsg.ACLResourceTypeTransactionalId

	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed

	allow = kmsg.ACLPermissionTypeAllow
	deny  = kmsg.ACLPermissionTypeDeny

	all          = kmsg.ACLOperationAll
	read         = kmsg.ACLOperationRead
	write        = kmsg.ACLOperationWrite
	create       = kmsg.ACLOperationCreate
	del          = kmsg.ACLOperationDelete
	alter        = kmsg.ACLOperationAlter
	describe     = kmsg.ACLOperationDescribe
	describeCfgs = kmsg.ACLOperationDescribeConfigs
	alterCfgs    = kmsg.ACLOperationAlterConfigs
	idemWrite    = kmsg.ACLOperationIdempotentWrite
)

// lit returns a LITERAL binding.
func lit(rt kmsg.ACLResourceType, name, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: literal, Principal: principal, Host: host, Operation: op, Permission: perm}
}

// pre returns a PREFIXED binding.
func pre(rt kmsg.ACLResourceType, name, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	b := lit(rt, name, principal, host, op, perm)
	b.PatternType = prefixed
	return b
}

func ptr(s string) *string { return &s }

// Package acl implements Kafka's ACL authorizer as a pure function over an
// immutable image of ACL bindings.
//
// A Binding is one ACL (Kafka's AclBinding): a resource pattern (type, name,
// LITERAL or PREFIXED) and an entry (principal, host, operation, ALLOW or
// DENY). A Filter selects bindings for DescribeAcls and DeleteAcls (Kafka's
// AclBindingFilter, including the MATCH pattern type of KIP-290). An Image is
// an immutable, indexed set of bindings; an Authorizer answers questions
// against the current Image, which is swapped atomically when the ACLs
// change. APIRequirements lists, per Kafka API key, what each request must
// be authorized for.
//
// Usage:
//
//	if err := b.Validate(); err != nil { // CreateAcls: refuse the binding
//		return err // wraps ErrInvalidBinding; INVALID_REQUEST
//	}
//	store(b.Key(), b.Marshal())
//	...
//	a := acl.NewAuthorizer(acl.Config{SuperUsers: []string{"User:admin"}}, acl.NewImage(loaded))
//	a.SetImage(acl.NewImage(updated)) // on every ACL change
//	if !a.Authorize("User:alice", "10.0.0.7", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "orders") {
//		// TOPIC_AUTHORIZATION_FAILED
//	}
//
// The decision rules are documented on Authorizer.Authorize and
// Authorizer.AuthorizeByResourceType; they follow Kafka's
// StandardAuthorizerData and the default Authorizer.authorizeByResourceType.
//
// Invariants:
//
//   - An Image never changes after NewImage returns and holds only bindings
//     that pass Validate, each once.
//   - DENY beats ALLOW: no number of matching ALLOWs outweighs one matching
//     DENY.
//   - Only ALLOW entries imply other operations (READ, WRITE, DELETE, ALTER
//     imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).
//   - Authorize and AuthorizeByResourceType never allocate on the common
//     path, take no lock, and see exactly one image per call.
//   - Binding.Key is a pure function of the binding's seven fields, so the
//     same binding has the same key in every process and every version.
//
// The package has no locks; the Authorizer's only shared state is an
// atomic.Pointer to the current Image.
package acl

package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinel errors. Every error returned by this package wraps one of them, so
// the broker can map it to a Kafka error code with errors.Is. All three map
// to INVALID_REQUEST, as Kafka's CreateAcls and DeleteAcls paths do.
var (
	// ErrInvalidBinding is wrapped by Binding.Validate and Unmarshal when a
	// binding is not one CreateAcls may create.
	ErrInvalidBinding = errors.New("acl: invalid binding")
	// ErrInvalidFilter is wrapped by Filter.Validate when a DescribeAcls or
	// DeleteAcls filter holds UNKNOWN values.
	ErrInvalidFilter = errors.New("acl: invalid filter")
	// ErrCorrupt is wrapped by Unmarshal when the stored bytes are not a
	// binding encoded by Marshal.
	ErrCorrupt = errors.New("acl: corrupt stored binding")
)

const (
	// WildcardResource is the LITERAL resource name that matches every
	// resource of its type (Kafka's ResourcePattern.WILDCARD_RESOURCE).
	WildcardResource = "*"
	// WildcardPrincipal matches every principal (Kafka's
	// WILDCARD_KAFKA_PRINCIPAL). NB: only the User type has a wildcard;
	// "Group:*" is an ordinary principal named "*".
	WildcardPrincipal = "User:*"
	// WildcardHost matches every client address.
	WildcardHost = "*"
	// ClusterName is the only name a Cluster resource has (Kafka's
	// Resource.CLUSTER_NAME).
	ClusterName = "kafka-cluster"
)

// Binding is one ACL: a resource pattern and an access control entry, as in
// Kafka's AclBinding. A Binding is a plain value and safe to copy and share.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType // LITERAL or PREFIXED
	Principal    string                      // "User:alice", or "User:*"
	Host         string                      // "*" or an IP address
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// String returns a readable form of b for logs; it is not a storage format.
func (b Binding) String() string {
	return fmt.Sprintf("(%s:%s:%s, %s from %s, %s %s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Permission, b.Operation)
}

// concreteResourceType reports whether rt names a resource an ACL can be set
// on: not UNKNOWN, not ANY, and not a code this package does not know (Kafka's
// ResourceType.fromCode turns unknown codes into UNKNOWN).
func concreteResourceType(rt kmsg.ACLResourceType) bool {
	return rt >= kmsg.ACLResourceTypeTopic && rt <= kmsg.ACLResourceTypeUser
}

// concreteOperation reports whether op is an operation an ACL can name: not
// UNKNOWN, not ANY, not an unknown code. ALL is concrete.
func concreteOperation(op kmsg.ACLOperation) bool {
	return op >= kmsg.ACLOperationAll && op <= kmsg.ACLOperationDescribeTokens
}

// Validate reports whether CreateAcls may create b. The error wraps
// ErrInvalidBinding and its text is fit to return to the client.
//
// It applies Kafka's AclControlManager.validateNewAcl (resource type,
// pattern type, operation and permission must be concrete; the name must be
// non-empty) and AclApis.handleCreateAcls (a Cluster resource is named
// kafka-cluster). Two checks are stricter than Kafka, because a binding that
// passes Kafka's checks but fails them can never match anything or breaks
// Kafka's own authorizer later: the principal must be "Type:name" with a
// non-empty type and name (StandardAcl.kafkaPrincipal throws on a principal
// without a colon at authorization time), and the host must be non-empty.
//
// NB: Validate does not check that the operation applies to the resource
// type (e.g. CLUSTER_ACTION on a Topic). Kafka enforces SupportedOperations
// only in the kafka-acls command line tool (AclCommand.validateOperation),
// never in the broker or controller, so CreateAcls accepts such bindings.
func (b Binding) Validate() error {
	if !concreteResourceType(b.ResourceType) {
		return fmt.Errorf("%w: invalid resource type %s", ErrInvalidBinding, enumString(b.ResourceType, int8(b.ResourceType)))
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("%w: invalid pattern type %s", ErrInvalidBinding, enumString(b.PatternType, int8(b.PatternType)))
	}
	if !concreteOperation(b.Operation) {
		return fmt.Errorf("%w: invalid operation %s", ErrInvalidBinding, enumString(b.Operation, int8(b.Operation)))
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return fmt.Errorf("%w: invalid permission type %s", ErrInvalidBinding, enumString(b.Permission, int8(b.Permission)))
	}
	if b.ResourceName == "" {
		return fmt.Errorf("%w: resource name should not be empty", ErrInvalidBinding)
	}
	// NB: Kafka checks the cluster name in the broker's CreateAcls handler,
	// whatever the pattern type, so a PREFIXED "kafka-" Cluster ACL is refused
	// as well.
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalidBinding, ClusterName)
	}
	typ, name, ok := strings.Cut(b.Principal, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not of the form principalType:principalName", ErrInvalidBinding, b.Principal)
	}
	if b.Host == "" {
		return fmt.Errorf("%w: host should not be empty", ErrInvalidBinding)
	}
	return nil
}

func enumString(v fmt.Stringer, code int8) string {
	return v.String() + "(" + strconv.Itoa(int(code)) + ")"
}

// SupportedOperations returns the operations that are meaningful on rt, ALL
// included, following Kafka's AclEntry.supportedOperations (which omits ALL;
// the kafka-acls tool adds it). It returns nil for ANY, UNKNOWN and unknown
// codes. The caller owns the returned slice.
//
// Validate deliberately does not enforce this list; see Binding.Validate.
func SupportedOperations(rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	const (
		all       = kmsg.ACLOperationAll
		read      = kmsg.ACLOperationRead
		write     = kmsg.ACLOperationWrite
		create    = kmsg.ACLOperationCreate
		del       = kmsg.ACLOperationDelete
		alter     = kmsg.ACLOperationAlter
		describe  = kmsg.ACLOperationDescribe
		clusterAc = kmsg.ACLOperationClusterAction
		descCfgs  = kmsg.ACLOperationDescribeConfigs
		altCfgs   = kmsg.ACLOperationAlterConfigs
		idemWrite = kmsg.ACLOperationIdempotentWrite
	)
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return []kmsg.ACLOperation{read, write, create, describe, del, alter, descCfgs, altCfgs, all}
	case kmsg.ACLResourceTypeGroup:
		// Group configs (KIP-848) added DESCRIBE_CONFIGS and ALTER_CONFIGS.
		return []kmsg.ACLOperation{read, describe, del, descCfgs, altCfgs, all}
	case kmsg.ACLResourceTypeCluster:
		return []kmsg.ACLOperation{create, clusterAc, descCfgs, altCfgs, idemWrite, alter, describe, all}
	case kmsg.ACLResourceTypeTransactionalId:
		return []kmsg.ACLOperation{describe, write, all}
	case kmsg.ACLResourceTypeDelegationToken:
		return []kmsg.ACLOperation{describe, all}
	case kmsg.ACLResourceTypeUser:
		return []kmsg.ACLOperation{kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens, all}
	}
	return nil
}

// canonical returns an unambiguous encoding of b: each string is prefixed
// by its length, so no choice of names can make two bindings collide.
func (b Binding) canonical() []byte {
	buf := make([]byte, 0, 32+len(b.ResourceName)+len(b.Principal)+len(b.Host))
	buf = append(buf, "acl1|"...)
	for _, c := range [...]int8{int8(b.ResourceType), int8(b.PatternType), int8(b.Operation), int8(b.Permission)} {
		buf = strconv.AppendInt(buf, int64(c), 10)
		buf = append(buf, '|')
	}
	for _, s := range [...]string{b.ResourceName, b.Principal, b.Host} {
		buf = strconv.AppendInt(buf, int64(len(s)), 10)
		buf = append(buf, ':')
		buf = append(buf, s...)
	}
	return buf
}

// Key returns a stable identifier of b: 64 lower-case hex digits, the
// SHA-256 of a length-prefixed canonical encoding of all seven fields. Two
// bindings have the same Key exactly when they are equal, so the key can
// name the binding in etcd and deduplicates creations as Kafka's
// AclControlManager does. Key never changes for a given binding.
func (b Binding) Key() string {
	sum := sha256.Sum256(b.canonical())
	return hex.EncodeToString(sum[:])
}

// storedBinding is the JSON form of a Binding. Enums are stored as Kafka's
// wire codes, which Kafka never renumbers; V is the format version.
type storedBinding struct {
	V            int    `json:"v"`
	ResourceType int8   `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	PatternType  int8   `json:"patternType"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    int8   `json:"operation"`
	Permission   int8   `json:"permission"`
}

const storedVersion = 1

// Marshal returns the storage encoding of b: JSON with fields in a fixed
// order, so equal bindings encode to equal bytes. The caller owns the
// returned slice.
func (b Binding) Marshal() []byte {
	out, err := json.Marshal(storedBinding{
		V:            storedVersion,
		ResourceType: int8(b.ResourceType),
		ResourceName: b.ResourceName,
		PatternType:  int8(b.PatternType),
		Principal:    b.Principal,
		Host:         b.Host,
		Operation:    int8(b.Operation),
		Permission:   int8(b.Permission),
	})
	if err != nil {
		// Marshalling a struct of strings and integers cannot fail.
		panic(fmt.Sprintf("acl: marshal binding: %v", err))
	}
	return out
}

// Unmarshal decodes bytes written by Marshal and validates the result. It
// returns an error wrapping ErrCorrupt if data is not such an encoding, or
// wrapping ErrInvalidBinding if the decoded binding fails Validate.
func Unmarshal(data []byte) (Binding, error) {
	var s storedBinding
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Binding{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if dec.More() {
		return Binding{}, fmt.Errorf("%w: trailing data", ErrCorrupt)
	}
	if s.V != storedVersion {
		return Binding{}, fmt.Errorf("%w: unsupported version %d", ErrCorrupt, s.V)
	}
	b := Binding{
		ResourceType: kmsg.ACLResourceType(s.ResourceType),
		ResourceName: s.ResourceName,
		PatternType:  kmsg.ACLResourcePatternType(s.PatternType),
		Principal:    s.Principal,
		Host:         s.Host,
		Operation:    kmsg.ACLOperation(s.Operation),
		Permission:   kmsg.ACLPermissionType(s.Permission),
	}
	if err := b.Validate(); err != nil {
		return Binding{}, fmt.Errorf("acl: unmarshal: %w", err)
	}
	return b, nil
}

// CanonicalHost returns host in the form the authorizer compares: an IP
// address in Go's canonical text form (IPv4-mapped IPv6 as IPv4, IPv6
// compressed and lower case: Java's "0:0:0:0:0:0:0:1" is "::1"), anything
// else (the "*" wildcard) unchanged. Bindings are stored, filters matched
// and requests authorized with canonical hosts, so a binding written the
// way Kafka's tools write IPv6 matches the client it names.
func CanonicalHost(host string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return host
}

package broker

import (
	"errors"

	"samsa/internal/acl"
	"samsa/internal/cluster"
)

// errSecurityDisabled is the answer of the ACL APIs on a broker without
// authorizer.class.name, as Kafka gives SECURITY_DISABLED when no
// Authorizer is configured.
var errSecurityDisabled = errors.New("broker: no authorizer is configured (set authorizer.class.name)")

// securityEnabled reports whether the ACL APIs are served: when an
// authorizer is configured.
func (b *Broker) securityEnabled() bool { return b.acls.enabled }

// storedACLs is the ACL bindings of one metadata image, indexed for the
// ACL APIs. It is built per request and not shared.
type storedACLs struct {
	img *acl.Image
	ids map[acl.Binding]string // etcd id of each binding
}

// loadACLs decodes the bindings of img. A stored value that does not
// decode is left out of what the ACL APIs list and delete (it has no
// binding to match a filter against); the authorizer denies everything
// but super users' requests while it is there (authz.go), and the log
// names its etcd key so that an operator can remove it.
func (b *Broker) loadACLs(img *cluster.Image) storedACLs {
	s := storedACLs{ids: make(map[acl.Binding]string)}
	var bs []acl.Binding
	if img.ACLs != nil {
		bs = make([]acl.Binding, 0, len(img.ACLs.Bindings))
		for id, v := range img.ACLs.Bindings {
			bd, err := acl.Unmarshal(v)
			if err != nil {
				b.log.Warn("stored ACL binding does not decode; remove etcd key acls/<id>", "id", id, "err", err)
				continue
			}
			bs = append(bs, bd)
			s.ids[bd] = id
		}
	}
	s.img = acl.NewImage(bs)
	return s
}

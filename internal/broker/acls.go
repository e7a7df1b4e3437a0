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

// securityEnabled reports whether the ACL APIs are served.
func (b *Broker) securityEnabled() bool { return b.cfg.AuthorizerClassName != "" }

// storedACLs is the ACL bindings of one metadata image, indexed for the
// ACL APIs. It is built per request and not shared.
type storedACLs struct {
	img *acl.Image
	ids map[acl.Binding]string // etcd id of each binding
}

// loadACLs decodes the bindings of img. A stored value that does not
// decode is skipped: Kafka's authorizer never sees it either, and it is
// logged so that an operator can remove it.
func (b *Broker) loadACLs(img *cluster.Image) storedACLs {
	s := storedACLs{ids: make(map[acl.Binding]string)}
	var bs []acl.Binding
	if img.ACLs != nil {
		bs = make([]acl.Binding, 0, len(img.ACLs.Bindings))
		for id, v := range img.ACLs.Bindings {
			bd, err := acl.Unmarshal(v)
			if err != nil {
				b.log.Warn("stored ACL binding does not decode; ignored", "id", id, "err", err)
				continue
			}
			bs = append(bs, bd)
			s.ids[bd] = id
		}
	}
	s.img = acl.NewImage(bs)
	return s
}

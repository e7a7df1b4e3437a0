package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys of the security state, under the cluster prefix:
//
//	users/<user>/<mechanism>   SCRAM credential (JSON scramValue); the user
//	                           name is path-escaped
//	acls/<id>                  one ACL binding, as the authorizer encodes it;
//	                           <id> is the binding's own stable id
const (
	usersDir = "users/"
	aclsDir  = "acls/"
)

// ErrNotFound reports a delete of a credential that does not exist.
var ErrNotFound = errors.New("cluster: not found")

// ScramCredential is a stored SCRAM credential (RFC 5802): the salt, the
// iteration count and the two keys derived from the salted password.
// The password is never stored.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// ACLSet is the ACL bindings in etcd, keyed by their id, as encoded by
// the authorizer. A new ACLSet (a new pointer) is made only when an ACL
// key changes, so a reader can rebuild derived indexes on identity change.
type ACLSet struct {
	Bindings map[string][]byte
}

func (k keys) scramUser(user string) string { return k.prefix + usersDir + url.PathEscape(user) + "/" }
func (k keys) scram(user, mechanism string) string {
	return k.scramUser(user) + mechanism
}
func (k keys) acl(id string) string { return k.prefix + aclsDir + id }

// parseSecurity classifies a key under users/ or acls/.
func (k keys) parseSecurity(rest string) (kind keyKind, user, mechanism, id string) {
	switch {
	case strings.HasPrefix(rest, usersDir):
		u, m, ok := strings.Cut(rest[len(usersDir):], "/")
		if !ok || u == "" || m == "" || strings.Contains(m, "/") {
			return kindUnknown, "", "", ""
		}
		name, err := url.PathUnescape(u)
		if err != nil {
			return kindUnknown, "", "", ""
		}
		return kindScram, name, m, ""
	case strings.HasPrefix(rest, aclsDir):
		id := rest[len(aclsDir):]
		if id == "" || strings.Contains(id, "/") {
			return kindUnknown, "", "", ""
		}
		return kindACL, "", "", id
	}
	return kindUnknown, "", "", ""
}

// applySecurity applies one event on a users/ or acls/ key to next.
// scramCloned and aclsCloned track copy-on-write of the image's maps.
func (b *builder) applySecurity(next, prev *Image, pk parsedKey, kv *mvccpb.KeyValue, del bool, scramCloned, aclsCloned *bool) {
	switch pk.kind {
	case kindScram:
		if !*scramCloned {
			next.ScramCredentials, *scramCloned = maps.Clone(prev.ScramCredentials), true
		}
		m := maps.Clone(next.ScramCredentials[pk.user])
		var v ScramCredential
		if del || !b.decode(kv, &v) {
			delete(m, pk.mechanism)
		} else {
			if m == nil {
				m = map[string]ScramCredential{}
			}
			m[pk.mechanism] = v
		}
		if len(m) == 0 {
			delete(next.ScramCredentials, pk.user)
		} else {
			next.ScramCredentials[pk.user] = m
		}
	case kindACL:
		if !*aclsCloned {
			next.ACLs, *aclsCloned = &ACLSet{Bindings: maps.Clone(prev.ACLs.Bindings)}, true
		}
		if del {
			delete(next.ACLs.Bindings, pk.aclID)
		} else {
			next.ACLs.Bindings[pk.aclID] = append([]byte(nil), kv.Value...)
		}
	}
}

// UpsertScramCredential stores user's credential for mechanism
// (AlterUserScramCredentials, KIP-554) and waits until this broker's image
// has it.
func (c *Cluster) UpsertScramCredential(ctx context.Context, user, mechanism string, cred ScramCredential) error {
	resp, err := c.cli.Put(ctx, c.keys.scram(user, mechanism), mustJSON(cred))
	if err != nil {
		return fmt.Errorf("cluster: store SCRAM credential: %w", err)
	}
	return c.waitRevision(ctx, resp.Header.Revision)
}

// DeleteScramCredential removes user's credential for mechanism; it
// returns ErrNotFound if there is none.
func (c *Cluster) DeleteScramCredential(ctx context.Context, user, mechanism string) error {
	resp, err := c.cli.Delete(ctx, c.keys.scram(user, mechanism))
	if err != nil {
		return fmt.Errorf("cluster: delete SCRAM credential: %w", err)
	}
	if resp.Deleted == 0 {
		return ErrNotFound
	}
	return c.waitRevision(ctx, resp.Header.Revision)
}

// maxTxnOps is the most operations samsa puts in one etcd transaction:
// an external etcd refuses more than --max-txn-ops (128 by default).
const maxTxnOps = 128

// commitOps commits ops in transactions of at most maxTxnOps and waits
// until this broker's image has the last. A failure leaves the batches
// before it applied (CreateAcls and DeleteAcls report per binding, as
// Kafka's, which does not apply them atomically either).
func (c *Cluster) commitOps(ctx context.Context, ops []clientv3.Op) error {
	var rev int64
	for len(ops) > 0 {
		n := min(len(ops), maxTxnOps)
		resp, err := c.cli.Txn(ctx).Then(ops[:n]...).Commit()
		if err != nil {
			return err
		}
		rev, ops = resp.Header.Revision, ops[n:]
	}
	return c.waitRevision(ctx, rev)
}

// PutACLs stores ACL bindings by id (a binding that exists is written
// again, unchanged) and waits until this broker's image has them.
func (c *Cluster) PutACLs(ctx context.Context, bindings map[string][]byte) error {
	if len(bindings) == 0 {
		return nil
	}
	ops := make([]clientv3.Op, 0, len(bindings))
	for id, v := range bindings {
		ops = append(ops, clientv3.OpPut(c.keys.acl(id), string(v)))
	}
	if err := c.commitOps(ctx, ops); err != nil {
		return fmt.Errorf("cluster: create ACLs: %w", err)
	}
	return nil
}

// DeleteACLs removes ACL bindings by id and waits until this broker's
// image no longer has them. Ids not present are ignored.
func (c *Cluster) DeleteACLs(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ops := make([]clientv3.Op, 0, len(ids))
	for _, id := range ids {
		ops = append(ops, clientv3.OpDelete(c.keys.acl(id)))
	}
	if err := c.commitOps(ctx, ops); err != nil {
		return fmt.Errorf("cluster: delete ACLs: %w", err)
	}
	return nil
}

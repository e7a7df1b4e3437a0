package broker

// AlterUserScramCredentials: v0
//
// * v0: upsertions carry the client's salt, salted password and iteration
//   count; deletions name a mechanism (KIP-554). The password never
//   reaches the broker, and only StoredKey and ServerKey are kept.
//
// Requires ALTER on the cluster: without it every user gets
// CLUSTER_AUTHORIZATION_FAILED. Checks, per deletion or upsertion, in
// Kafka's order: a mechanism other than SCRAM-SHA-256 or SCRAM-SHA-512 is
// UNSUPPORTED_SASL_MECHANISM; an empty user name, an iteration count outside
// 4096..16384, or an empty salt or salted password is UNACCEPTABLE_CREDENTIAL;
// deleting a credential that does not exist is RESOURCE_NOT_FOUND. A user
// named more than once in the request (in either list, even for two
// mechanisms) gets DUPLICATE_RESOURCE and none of its changes apply.
//
// There is one result per user, in the order users first appear
// (deletions, then upsertions); Kafka's order follows a hash map. Unlike
// Kafka, whose controller commits all the changes of a request in one
// batch, each user's change is its own etcd write: a failure of the store
// can leave some users changed and not others, and the results say which.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/sasl"
	"samsa/internal/server"
)

// errEmptyUser is refused by AlterUserScramCredentials.
var errEmptyUser = errors.New("broker: user name must not be empty")

// scramChange is the validated change of one user.
type scramChange struct {
	mechanism string
	delete    bool
	cred      cluster.ScramCredential // upsertions only
}

func (b *Broker) handleAlterUserSCRAMCredentials(ctx context.Context, c *server.Conn, req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string // in order of first appearance
	results := make(map[string]*kmsg.AlterUserSCRAMCredentialsResponseResult)
	changes := make(map[string]scramChange)
	result := func(user string) *kmsg.AlterUserSCRAMCredentialsResponseResult {
		r := results[user]
		if r == nil {
			nr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			nr.User = user
			r = &nr
			results[user] = r
			users = append(users, user)
		}
		return r
	}
	fail := func(user string, code *kerr.Error, err error) {
		r := result(user)
		r.ErrorCode, r.ErrorMessage = code.Code, errMessage(err)
		delete(changes, user)
	}
	// add records one change for user, or refuses the user if it has one.
	add := func(user string, code int8, validate func(mechanism string) (scramChange, error)) {
		if r := results[user]; r != nil {
			// NB: a user already refused keeps its first error, as in Kafka.
			if r.ErrorCode == 0 {
				fail(user, kerr.DuplicateResource, fmt.Errorf("user %q is altered more than once in the request", user))
			}
			return
		}
		result(user)
		mech := scramMechanismName(code)
		if mech == "" {
			err := fmt.Errorf("%w: SCRAM mechanism code %d", sasl.ErrUnsupportedMechanism, code)
			fail(user, errCode(err), err)
			return
		}
		if user == "" {
			fail(user, errCode(errEmptyUser), errEmptyUser)
			return
		}
		ch, err := validate(mech)
		if err != nil {
			fail(user, errCode(err), err)
			return
		}
		changes[user] = ch
	}
	for _, d := range req.Deletions {
		add(d.Name, d.Mechanism, func(mech string) (scramChange, error) {
			return scramChange{mechanism: mech, delete: true}, nil
		})
	}
	for _, u := range req.Upsertions {
		add(u.Name, u.Mechanism, func(mech string) (scramChange, error) {
			sc, err := sasl.CredentialFromSaltedPassword(mech, u.Salt, u.SaltedPassword, int(u.Iterations))
			if err != nil {
				return scramChange{}, err
			}
			return scramChange{mechanism: mech, cred: cluster.ScramCredential{
				Salt: sc.Salt, Iterations: sc.Iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey,
			}}, nil
		})
	}
	if !b.authorizeCluster(c, kmsg.ACLOperationAlter) {
		for _, u := range users {
			r := results[u]
			r.ErrorCode, r.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, nil
		}
		changes = nil
	}
	for _, u := range users {
		ch, ok := changes[u]
		if !ok {
			continue
		}
		var err error
		if ch.delete {
			err = b.cluster.DeleteScramCredential(ctx, u, ch.mechanism)
			if errors.Is(err, cluster.ErrNotFound) {
				err = fmt.Errorf("user %q has no %s credential: %w", u, ch.mechanism, err)
			}
		} else {
			err = b.cluster.UpsertScramCredential(ctx, u, ch.mechanism, ch.cred)
		}
		if err != nil {
			r := results[u]
			r.ErrorCode, r.ErrorMessage = errCode(err).Code, errMessage(err)
		}
	}
	for _, u := range users {
		resp.Results = append(resp.Results, *results[u])
	}
	return resp
}

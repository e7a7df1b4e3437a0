package broker

// DescribeUserScramCredentials: v0
//
// * v0: the SCRAM mechanisms and iteration counts of users (KIP-554).
//
// Requires DESCRIBE on the cluster: without it the whole response gets
// CLUSTER_AUTHORIZATION_FAILED. A null or empty user list describes every
// user with a credential, sorted by name; otherwise the named users are
// described in the order first named. A user without credentials gets
// RESOURCE_NOT_FOUND and a user named more than once gets
// DUPLICATE_RESOURCE (once). Salts and keys are never returned. Unlike
// Kafka, whose order follows a hash map, results come in a stable order,
// and the mechanisms of a user are listed SCRAM-SHA-256 first.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleDescribeUserSCRAMCredentials(c *server.Conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !b.authorizeCluster(c, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	creds := b.cluster.Image().ScramCredentials
	var users []string
	count := make(map[string]int)
	if len(req.Users) == 0 {
		for u := range creds {
			users = append(users, u)
		}
		slices.Sort(users)
	} else {
		for _, u := range req.Users {
			if count[u.Name] == 0 {
				users = append(users, u.Name)
			}
			count[u.Name]++
		}
	}
	for _, u := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case count[u] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = errMessage(fmt.Errorf("user %q is named more than once in the request", u))
		default:
			for _, code := range []int8{scramMechanismSHA256, scramMechanismSHA512} {
				cred, ok := creds[u][scramMechanismName(code)]
				if !ok {
					continue
				}
				ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				ci.Mechanism, ci.Iterations = code, int32(cred.Iterations)
				r.CredentialInfos = append(r.CredentialInfos, ci)
			}
			if len(r.CredentialInfos) == 0 {
				r.ErrorCode = kerr.ResourceNotFound.Code
				r.ErrorMessage = errMessage(fmt.Errorf("user %q has no SCRAM credential", u))
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

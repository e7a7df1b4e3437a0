package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"samsa/internal/sasl"
	"samsa/internal/testutil"
)

// alterSCRAMs runs kadm's AlterUserSCRAMs and fails the test on a request
// error or on any user's error.
func alterSCRAMs(t *testing.T, adm *kadm.Client, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
	t.Helper()
	rs, err := adm.AlterUserSCRAMs(ctxT(t, 30*time.Second), del, up)
	if err != nil {
		t.Fatalf("alter user SCRAMs: %v", err)
	}
	for u, r := range rs {
		if r.Err != nil {
			t.Fatalf("alter user SCRAM %s: %v (%s)", u, r.Err, r.ErrMessage)
		}
	}
}

// Reference: KIP-554.
func TestAlterUserSCRAMsStoresKeysThatDescribeReportsWithoutSecrets(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t) // SCRAM APIs need no authorizer
	adm := b.Admin()
	alterSCRAMs(t, adm, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "a-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "b-secret"},
	})
	alterSCRAMs(t, adm, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 16384, Password: "a-secret"},
	})

	// The stored keys are those the password derives with the client's salt.
	creds := b.Node.Image().ScramCredentials
	for _, c := range []struct {
		user, mech, password string
		iterations           int
	}{
		{"alice", sasl.ScramSHA256, "a-secret", 8192},
		{"alice", sasl.ScramSHA512, "a-secret", 16384},
		{"bob", sasl.ScramSHA512, "b-secret", 4096},
	} {
		got, ok := creds[c.user][c.mech]
		if !ok {
			t.Fatalf("no stored %s credential for %s", c.mech, c.user)
		}
		want, err := sasl.NewScramCredential(c.mech, c.password, got.Salt, c.iterations)
		if err != nil {
			t.Fatal(err)
		}
		if got.Iterations != c.iterations || !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) {
			t.Fatalf("%s %s: stored %+v, want keys of the password at %d iterations", c.user, c.mech, got, c.iterations)
		}
	}

	ctx := ctxT(t, 30*time.Second)
	all, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatalf("describe all: %v", err)
	}
	if got, want := fmt.Sprint(all["alice"].CredInfos), "[SCRAM-SHA-256=iterations=8192 SCRAM-SHA-512=iterations=16384]"; len(all) != 2 || got != want {
		t.Fatalf("describe all: %+v, want alice %s and bob", all, want)
	}
	named, err := adm.DescribeUserSCRAMs(ctx, "bob", "nobody")
	if err != nil {
		t.Fatalf("describe named: %v", err)
	}
	if r := named["bob"]; r.Err != nil || len(r.CredInfos) != 1 || r.CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe bob: %+v", r)
	}
	if r := named["nobody"]; !errors.Is(r.Err, kerr.ResourceNotFound) {
		t.Fatalf("describe nobody: %+v, want RESOURCE_NOT_FOUND", r)
	}

	// A user named twice is a duplicate (kadm would merge the names).
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"bob", "alice", "bob"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp := request[*kmsg.DescribeUserSCRAMCredentialsResponse](t, b.Client(), req)
	if len(resp.Results) != 2 || resp.Results[0].User != "bob" || resp.Results[0].ErrorCode != kerr.DuplicateResource.Code ||
		resp.Results[1].User != "alice" || resp.Results[1].ErrorCode != 0 {
		t.Fatalf("describe bob, alice, bob: %+v, want bob DUPLICATE_RESOURCE then alice", resp.Results)
	}

	alterSCRAMs(t, adm, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "bob", Mechanism: kadm.ScramSha512}}, nil)
	creds = b.Node.Image().ScramCredentials
	if _, ok := creds["bob"]; ok || len(creds["alice"]) != 1 {
		t.Fatalf("after deletes: %v, want only alice's SCRAM-SHA-512", creds)
	}
}

func TestAlterUserSCRAMsRefusesWhatKafkaRefuses(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	cl := b.Client()
	alterSCRAMs(t, b.Admin(), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "c"}})

	up := func(user string, mech int8, iterations int32, salt, salted []byte) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iterations, salt, salted
		return u
	}
	del := func(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		return d
	}
	salt, salted := []byte("salt"), bytes.Repeat([]byte{1}, 32)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		del("nobody", 1),  // no such credential
		del("carol", 2),   // carol has SCRAM-SHA-256 only
		del("dup", 1),     // also upserted below
		del("badmech", 3), // unknown mechanism
	}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("dup", 1, 4096, salt, salted),
		up("few", 1, 4095, salt, salted),
		up("many", 2, 16385, salt, salted),
		up("", 1, 4096, salt, salted),
		up("nosalt", 1, 4096, nil, salted),
		up("mech0", 0, 4096, salt, salted),
		up("ok", 2, 4096, salt, salted),
	}
	resp := request[*kmsg.AlterUserSCRAMCredentialsResponse](t, cl, req)
	want := []struct {
		user string
		err  *kerr.Error
	}{
		{"nobody", kerr.ResourceNotFound},
		{"carol", kerr.ResourceNotFound},
		{"dup", kerr.DuplicateResource},
		{"badmech", kerr.UnsupportedSaslMechanism},
		{"few", kerr.UnacceptableCredential},
		{"many", kerr.UnacceptableCredential},
		{"", kerr.UnacceptableCredential},
		{"nosalt", kerr.UnacceptableCredential},
		{"mech0", kerr.UnsupportedSaslMechanism},
		{"ok", nil},
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Results), len(want), resp.Results)
	}
	for i, w := range want {
		r := resp.Results[i]
		err := kerr.ErrorForCode(r.ErrorCode)
		if r.User != w.user || (w.err == nil) != (err == nil) || (w.err != nil && err != w.err) {
			t.Errorf("result %d: %q %v, want %q %v", i, r.User, err, w.user, w.err)
		}
		if w.err != nil && (r.ErrorMessage == nil || *r.ErrorMessage == "") {
			t.Errorf("result %d (%q): no error message", i, r.User)
		}
	}
	creds := b.Node.Image().ScramCredentials
	if _, ok := creds["ok"][sasl.ScramSHA512]; !ok || len(creds) != 2 {
		t.Fatalf("stored users %v, want carol and ok", creds)
	}
}

// startSASLBroker starts a broker with a PLAINTEXT listener (inter-broker,
// anonymous super user) and a SASL_PLAINTEXT listener, and returns it with
// the SASL listener's address.
func startSASLBroker(t *testing.T) (*testutil.Broker, string) {
	t.Helper()
	b := startSecureBroker(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
	)
	for _, br := range b.Node.Image().Brokers {
		if host, port, ok := br.Endpoint("SASL_PLAINTEXT"); ok {
			return b, fmt.Sprintf("%s:%d", host, port)
		}
	}
	t.Fatal("no SASL_PLAINTEXT endpoint registered")
	return nil, ""
}

// pingSCRAM connects to addr as user with SCRAM-SHA-512 and returns the
// error of one Metadata request.
func pingSCRAM(t *testing.T, addr, user, password string) error {
	t.Helper()
	cl := testutil.NewClient(t, addr,
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
		kgo.RequestRetries(0),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cl.Request(ctx, kmsg.NewPtrMetadataRequest())
	return err
}

// Reference: KIP-554 (credentials created through the Admin API
// authenticate SCRAM clients) and RFC 5802.
func TestSCRAMUserCreatedByAlterUserSCRAMsAuthenticates(t *testing.T) {
	t.Parallel()
	b, saslAddr := startSASLBroker(t)
	if err := pingSCRAM(t, saslAddr, "dave", "d-secret"); err == nil {
		t.Fatal("unknown user authenticated")
	}
	alterSCRAMs(t, b.Admin(), nil, []kadm.UpsertSCRAM{{User: "dave", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "d-secret"}})
	if err := pingSCRAM(t, saslAddr, "dave", "d-secret"); err != nil {
		t.Fatalf("dave with the right password: %v", err)
	}
	err := pingSCRAM(t, saslAddr, "dave", "wrong")
	if err == nil || !errors.Is(err, kerr.SaslAuthenticationFailed) && !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("dave with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

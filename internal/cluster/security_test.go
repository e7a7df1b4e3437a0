package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// SCRAM credentials and ACLs written by one broker reach every broker's
// image through the watch, and an ACL set is replaced only when an ACL
// changes.
func TestSecurityStateReachesEveryImage(t *testing.T) {
	t.Parallel()
	a := openTest(t, 0, t.TempDir())
	b := openTest(t, 1, t.TempDir(), a.ClientURL())
	ctx := testCtx(t)

	cred := ScramCredential{Salt: []byte("salt"), Iterations: 4096, StoredKey: []byte("sk"), ServerKey: []byte("svk")}
	if err := a.UpsertScramCredential(ctx, "al/ice", "SCRAM-SHA-256", cred); err != nil {
		t.Fatal(err)
	}
	if err := a.PutACLs(ctx, map[string][]byte{"k1": []byte(`{"a":1}`), "k2": []byte(`{"a":2}`)}); err != nil {
		t.Fatal(err)
	}
	img := waitImage(t, b, "credential and ACLs", func(img *Image) bool {
		_, ok := img.ScramCredentials["al/ice"]["SCRAM-SHA-256"]
		return ok && len(img.ACLs.Bindings) == 2
	})
	if got := img.ScramCredentials["al/ice"]["SCRAM-SHA-256"]; got.Iterations != 4096 || !bytes.Equal(got.StoredKey, []byte("sk")) {
		t.Errorf("credential %+v", got)
	}
	acls := img.ACLs
	if err := a.SetBrokerConfigs(ctx, "", map[string]string{"log.retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	img = waitImage(t, b, "broker config", func(img *Image) bool { return len(img.BrokerConfigs[""]) == 1 })
	if img.ACLs != acls {
		t.Error("an unrelated write replaced the ACL set")
	}
	if err := a.DeleteACLs(ctx, []string{"k1", "nope"}); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteScramCredential(ctx, "al/ice", "SCRAM-SHA-256"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteScramCredential(ctx, "al/ice", "SCRAM-SHA-256"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	img = waitImage(t, b, "deletes", func(img *Image) bool {
		return len(img.ScramCredentials) == 0 && len(img.ACLs.Bindings) == 1
	})
	if _, ok := img.ACLs.Bindings["k2"]; !ok {
		t.Errorf("ACLs left %v", img.ACLs.Bindings)
	}
	if acls.Bindings["k1"] == nil {
		t.Error("an earlier image's ACL set was modified")
	}
}

// More ACLs than one etcd transaction may hold (128 operations on an
// external etcd by default) are stored and deleted in batches.
func TestManyACLsAreWrittenInBatches(t *testing.T) {
	t.Parallel()
	c := openTest(t, 0, t.TempDir())
	ctx := testCtx(t)
	m := map[string][]byte{}
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("k%03d", i)
		m[id], ids = []byte(`{}`), append(ids, id)
	}
	if err := c.PutACLs(ctx, m); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Image().ACLs.Bindings); n != 300 {
		t.Fatalf("%d ACLs in the image, want 300", n)
	}
	if err := c.DeleteACLs(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Image().ACLs.Bindings); n != 0 {
		t.Fatalf("%d ACLs left, want 0", n)
	}
}

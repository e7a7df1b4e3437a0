package cluster

import (
	"errors"
	"testing"
)

// TestInitialClusterURLs checks how a member finds its own peer URLs in
// etcd.initial.cluster, and that malformed settings are refused.
func TestInitialClusterURLs(t *testing.T) {
	tests := []struct {
		initial, name string
		want          string // the URLs joined by spaces, or "" for ErrEtcdConfig
	}{
		{"a=http://h1:2380,b=http://h2:2380", "b", "http://h2:2380"},
		{"a=http://h1:2380,a=http://h1b:2380,b=http://h2:2380", "a", "http://h1:2380 http://h1b:2380"},
		{"a=http://h1:2380", "c", ""},
		{"a=http://h1:2380,bogus", "a", ""},
		{"a=", "a", ""},
		{"a=://nohost", "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.initial+"/"+tt.name, func(t *testing.T) {
			us, err := initialClusterURLs(tt.initial, tt.name)
			if tt.want == "" {
				if !errors.Is(err, ErrEtcdConfig) {
					t.Fatalf("err %v, want ErrEtcdConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for i, u := range us {
				if i > 0 {
					got += " "
				}
				got += u.String()
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStartEmbeddedRefusesBadState checks that an unknown
// etcd.initial.cluster.state fails before etcd starts.
func TestStartEmbeddedRefusesBadState(t *testing.T) {
	_, err := startEmbedded(testCtx(t), t.TempDir(), 0, EmbeddedConfig{InitialClusterState: "joining"})
	if !errors.Is(err, ErrEtcdConfig) {
		t.Fatalf("err %v, want ErrEtcdConfig", err)
	}
}

package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestMetaPropertiesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := readMetaProperties(dir); ok || err != nil {
		t.Fatalf("empty dir: ok=%v err=%v", ok, err)
	}
	want := metaProperties{ClusterID: newClusterID(), NodeID: 4}
	if err := writeMetaProperties(dir, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := readMetaProperties(dir)
	if err != nil || !ok || got != want {
		t.Fatalf("read back %+v ok=%v err=%v, want %+v", got, ok, err, want)
	}
}

func TestReadMetaPropertiesKafkaFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		want    metaProperties
		wantErr bool
	}{
		{"kafka kraft file", "#\n#Thu Jan 01 00:00:00 UTC 2026\nnode.id=2\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n",
			metaProperties{ClusterID: "MkU3OEVBNTcwNTJENDM2Qk", NodeID: 2}, false},
		{"spaces", "version = 1\ncluster.id = abc\nnode.id = 0\n", metaProperties{ClusterID: "abc"}, false},
		{"version 0", "version=0\ncluster.id=abc\nbroker.id=0\n", metaProperties{}, true},
		{"no cluster id", "version=1\nnode.id=0\n", metaProperties{}, true},
		{"bad node id", "version=1\ncluster.id=abc\nnode.id=x\n", metaProperties{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, metaPropertiesFile), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, ok, err := readMetaProperties(dir)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error, got %+v", got)
				}
				return
			}
			if err != nil || !ok || got != tc.want {
				t.Fatalf("got %+v ok=%v err=%v, want %+v", got, ok, err, tc.want)
			}
		})
	}
}

func TestNewClusterIDIsKafkaShaped(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)
	seen := map[string]bool{}
	for range 100 {
		id := newClusterID()
		if !re.MatchString(id) || id[0] == '-' {
			t.Fatalf("cluster id %q", id)
		}
		if seen[id] {
			t.Fatalf("cluster id %q repeated", id)
		}
		seen[id] = true
	}
}

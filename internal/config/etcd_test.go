package config

import (
	"errors"
	"reflect"
	"testing"
)

// TestEtcdMemberConfigs checks the embedded etcd member settings: their
// defaults, parsing, and the rules between them.
func TestEtcdMemberConfigs(t *testing.T) {
	b, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.EtcdName != "" || b.EtcdInitialCluster != "" || b.EtcdInitialClusterState != "new" ||
		b.EtcdListenPeerURLs != nil || b.EtcdListenClientURLs != nil {
		t.Fatalf("defaults: %+v", b)
	}
	b, err = Load("", []string{
		"etcd.name=b1",
		"etcd.initial.cluster=b0=http://h0:2380, b1=http://h1:2380",
		"etcd.initial.cluster.state=existing",
		"etcd.listen.peer.urls=http://0.0.0.0:2380",
		"etcd.advertise.peer.urls=http://h1:2380",
		"etcd.listen.client.urls=http://0.0.0.0:2379,unix:///tmp/e.sock",
		"etcd.advertise.client.urls=http://h1:2379",
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.EtcdName != "b1" || b.EtcdInitialCluster != "b0=http://h0:2380, b1=http://h1:2380" || b.EtcdInitialClusterState != "existing" {
		t.Fatalf("parsed: %q %q %q", b.EtcdName, b.EtcdInitialCluster, b.EtcdInitialClusterState)
	}
	if !reflect.DeepEqual(b.EtcdListenClientURLs, []string{"http://0.0.0.0:2379", "unix:///tmp/e.sock"}) ||
		!reflect.DeepEqual(b.EtcdListenPeerURLs, []string{"http://0.0.0.0:2380"}) ||
		!reflect.DeepEqual(b.EtcdAdvertisePeerURLs, []string{"http://h1:2380"}) ||
		!reflect.DeepEqual(b.EtcdAdvertiseClientURLs, []string{"http://h1:2379"}) {
		t.Fatalf("url lists: %+v", b)
	}
	for _, bad := range [][]string{
		{"etcd.initial.cluster.state=joining"},
		{"etcd.endpoints=http://e:2379", "etcd.initial.cluster=a=http://a:2380"},
	} {
		if _, err := Load("", bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v: err %v, want ErrInvalidConfig", bad, err)
		}
	}
}

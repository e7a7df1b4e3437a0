package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"samsa/internal/cluster"
)

// newDevEtcdCmd returns `samsa dev etcd`: a stand-alone embedded etcd
// member that several `samsa serve` processes share through
// etcd.endpoints, for multi-process tests on one host. Alone it is a
// single-member cluster; with --initial-cluster it is one member of a
// multi-member cluster, each member its own process:
//
//	flag                    | default                       | etcd flag
//	------------------------+-------------------------------+------------------------------
//	--name                  | samsa-0                       | --name
//	--initial-cluster       | (a single member)             | --initial-cluster
//	--initial-cluster-state | new                           | --initial-cluster-state
//	--listen-peer-url       | own URL in --initial-cluster  | --listen/advertise-peer-urls
//	--listen-client-url     | unix socket in --data-dir     | --listen/advertise-client-urls
func newDevEtcdCmd(e env) *cobra.Command {
	var (
		dataDir string
		ec      cluster.EmbeddedConfig
		peerURL string
		client  string
	)
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run one etcd member for a multi-process cluster",
		Long: `Run an etcd member, configured as samsa serve configures its embedded
member, with its data under --data-dir, until SIGINT or SIGTERM. Without
--initial-cluster it is a single-member cluster; with it, one member of
a multi-member cluster (start every member, each with its own --name and
--data-dir: a new cluster serves once a majority of them runs).
Its client URL (--listen-client-url; by default a unix socket in
--data-dir, or loopback TCP when that path is too long) is printed to
stdout as one line once it serves. Brokers join it with
--override etcd.endpoints=<url>[,<url>...].`,
		Example: `  samsa dev etcd --data-dir /tmp/etcd
  samsa dev etcd --data-dir /tmp/etcd1 --name m1 \
    --initial-cluster m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2381,m3=http://127.0.0.1:2382 \
    --listen-client-url http://127.0.0.1:2379`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return usagef("--data-dir is required")
			}
			if ec.InitialCluster == "" && ec.InitialClusterState != "" {
				return usagef("--initial-cluster-state needs --initial-cluster")
			}
			if peerURL != "" {
				ec.ListenPeerURLs = []string{peerURL}
			}
			if client != "" {
				ec.ListenClientURLs = []string{client}
			}
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return fmt.Errorf("dev etcd: %w", err)
			}
			ee, err := cluster.StartEmbeddedEtcdMember(cmd.Context(), dataDir, ec)
			if errors.Is(err, cluster.ErrEtcdConfig) {
				return usagef("%v", err)
			}
			if err != nil {
				return fmt.Errorf("dev etcd: %w", err)
			}
			defer ee.Close()
			fmt.Fprintln(e.stdout, ee.ClientURL())
			<-cmd.Context().Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", "", "directory for the etcd data (required)")
	f.StringVar(&ec.Name, "name", "", "member name (default samsa-0)")
	f.StringVar(&ec.InitialCluster, "initial-cluster", "", "every member as name=peerURL, comma-separated; empty for a single member")
	f.StringVar(&ec.InitialClusterState, "initial-cluster-state", "", "new (default) or existing: join a running cluster")
	f.StringVar(&peerURL, "listen-peer-url", "", "peer URL to listen on (default this member's URL in --initial-cluster)")
	f.StringVar(&client, "listen-client-url", "", "client URL to listen on and print (default a unix socket in --data-dir)")
	return cmd
}

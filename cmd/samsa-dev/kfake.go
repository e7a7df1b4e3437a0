package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"samsa/internal/cli"
)

// newKfakeCmd is `dev kfake`.
func newKfakeCmd() *cobra.Command {
	var (
		listen     string
		partitions int32
		topics     []string
	)
	cmd := &cobra.Command{
		Use:   "kfake",
		Short: "Run franz-go's in-memory fake Kafka broker",
		Long: `Run kfake, franz-go's in-memory Kafka broker, as its own process on
--listen until interrupted. Benchmarks run it beside samsa under the same
client load and read each broker process's CPU time from /proc. Nothing is
persisted. The listen address is printed to stdout once the broker
accepts connections.`,
		Example: `  samsa-dev dev kfake --listen 127.0.0.1:9093 --partitions 6 --topic perf`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("accepts 0 arg(s), received %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, portStr, err := net.SplitHostPort(listen)
			if err != nil {
				return cli.Usagef("--listen %q: %v", listen, err)
			}
			port, err := strconv.Atoi(portStr)
			if err != nil || port < 0 || port > 65535 {
				return cli.Usagef("--listen %q: bad port", listen)
			}
			opts := []kfake.Opt{
				kfake.NumBrokers(1),
				kfake.Ports(port),
				// kfake always asks for 127.0.0.1; listen where we were told.
				kfake.ListenFn(func(network, _ string) (net.Listener, error) {
					return net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
				}),
				kfake.AllowAutoTopicCreation(),
			}
			if partitions > 0 {
				opts = append(opts, kfake.DefaultNumPartitions(int(partitions)))
			}
			if len(topics) > 0 {
				opts = append(opts, kfake.SeedTopics(partitions, topics...))
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				return fmt.Errorf("start kfake: %w", err)
			}
			defer c.Close()
			for _, a := range c.ListenAddrs() {
				fmt.Fprintf(cmd.OutOrStdout(), "kfake listening on %s\n", a)
			}
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:9093", "host:port to listen on")
	cmd.Flags().Int32Var(&partitions, "partitions", 0, "default partitions of new topics (0: kfake default)")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic to create at start (repeatable)")
	return cmd
}

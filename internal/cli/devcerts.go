package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"samsa/internal/tlsconfig"
)

// newDevCertsCmd returns `samsa dev certs DIR`: a development CA with a
// server and a client certificate, to try SSL and SASL_SSL listeners.
func newDevCertsCmd(e env) *cobra.Command {
	var hosts []string
	cmd := &cobra.Command{
		Use:   "certs DIR",
		Short: "Write a development CA, a server and a client certificate",
		Long: `Write a self-signed development CA (ca.pem, ca.key), a server certificate
with its key and chain (server.pem, for ssl.keystore.location) and a client
certificate (client.pem and client.key, and client-bundle.pem holding both)
into DIR, which is created if missing. The server certificate names
localhost, 127.0.0.1 and ::1, plus every --host. Existing files are never
overwritten. For trying TLS and SASL_SSL, not for production.`,
		Example: `  samsa dev certs ./certs
  samsa dev certs ./certs --host broker1.example.com --host 10.0.0.5`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return fmt.Errorf("dev certs: %w", err)
			}
			all := append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
			f, err := tlsconfig.GenerateDevCerts(args[0], all, time.Now())
			if err != nil {
				return fmt.Errorf("dev certs: %w", err)
			}
			fmt.Fprintf(e.stdout, "CA certificate (ssl.truststore.location, kcat ssl.ca.location): %s\n", f.CA)
			fmt.Fprintf(e.stdout, "server key store (ssl.keystore.location):                   %s\n", f.Server)
			fmt.Fprintf(e.stdout, "client certificate and key (ssl.certificate.location, ssl.key.location): %s %s\n", f.Client, f.ClientKey)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "another host name or IP address for the server certificate (repeatable)")
	return cmd
}

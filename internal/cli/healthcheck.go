package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// DefaultHealthcheckURL is the readiness endpoint samsa healthcheck asks
// when --url is not given: the admin listener's default address.
const DefaultHealthcheckURL = "http://127.0.0.1:9080/readyz"

// newHealthcheckCmd returns `samsa healthcheck`: one GET of a broker's
// /readyz, for container health checks in images that have no curl.
func newHealthcheckCmd(e env) *cobra.Command {
	var (
		target  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 if a broker's admin endpoint answers 200, 1 otherwise",
		Long: `Send one GET to a broker's admin HTTP endpoint, by default /readyz on the
admin listener's default address (` + DefaultHealthcheckURL + `), and
exit 0 if it answers 200 OK within --timeout, printing the status. Any
other status, a refused or failed connection and no answer in time exit
1 with the reason on stderr. /readyz answers 200 while the broker serves
(log dir online, registered in the cluster); /healthz answers 200 while
the process runs. The samsa image uses this command as its HEALTHCHECK,
since it has no curl; a broker whose admin.listener is elsewhere needs
--url. The request goes straight to the address, never through a proxy.`,
		Example: `  samsa healthcheck
  samsa healthcheck --url http://127.0.0.1:9081/readyz --timeout 1s
  docker inspect -f '{{.State.Health.Status}}' samsa1`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(target)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usageIn(cmd, fmt.Errorf("--url %q: want an http:// or https:// URL with a host", target))
			}
			if timeout <= 0 {
				return usageIn(cmd, fmt.Errorf("--timeout %s: must be positive", timeout))
			}
			status, err := healthcheck(cmd.Context(), u.String(), timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s: %s\n", u, status)
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "url", DefaultHealthcheckURL, "admin endpoint to ask")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "give up after this long")
	return cmd
}

// healthcheck GETs target once and returns its status line if it is 200
// OK. Any other outcome is an error naming target and the reason: the
// status and the first line of the body, or the connection error.
func healthcheck(ctx context.Context, target string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", fmt.Errorf("healthcheck %s: %w", target, err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("healthcheck %s: no answer within %s", target, timeout)
		}
		// url.Error repeats the method and URL; keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("healthcheck %s: %w", target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		first, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		if first != "" {
			return "", fmt.Errorf("healthcheck %s: %s: %s", target, resp.Status, first)
		}
		return "", fmt.Errorf("healthcheck %s: %s", target, resp.Status)
	}
	return resp.Status, nil
}

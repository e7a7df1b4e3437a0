package broker_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
	"samsa/internal/tlsconfig"
)

// TestClientCertificatePrincipalIsAuthorized: on an SSL listener with
// ssl.client.auth=required, the principal is the client certificate's
// subject mapped by ssl.principal.mapping.rules (KIP-371), and ACLs name
// that principal.
func TestClientCertificatePrincipalIsAuthorized(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files, err := tlsconfig.GenerateDevCerts(dir, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := testutil.StartBroker(t,
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT",
		"ssl.keystore.location="+files.Server,
		"ssl.truststore.location="+files.CA,
		"ssl.client.auth=required",
		`ssl.principal.mapping.rules=RULE:^CN=([a-z]+).*$/$1-app/,DEFAULT`,
		"authorizer.class.name=samsa",
		"super.users=User:ANONYMOUS",
		"num.partitions=1",
	)
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(files.Client, files.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	cl := testutil.NewClient(t, b.Node.ListenerAddr("SSL"), kgo.RequestRetries(0),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{cert}}))

	// The PLAINTEXT client (User:ANONYMOUS, a super user here) makes the
	// topic; the certificate's principal may not write to it yet.
	testutil.CreateTopic(t, b.Admin(), "certs", 1)
	if c := produceCode(t, cl, "certs"); c != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce without an ACL for the certificate's principal: %v", kerr.ErrorForCode(c))
	}
	grant(t, b, allow("User:client-app", kmsg.ACLResourceTypeTopic, "certs", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationWrite))
	if c := produceCode(t, cl, "certs"); c != 0 {
		t.Fatalf("produce as User:client-app (CN=client mapped by the rule): %v", kerr.ErrorForCode(c))
	}
}

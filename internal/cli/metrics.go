package cli

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

// serverCollector exposes the Kafka listener's counters, read at scrape
// time from server.Stats.
type serverCollector struct {
	s                           *server.Server
	conns, accepted             *prometheus.Desc
	requests, bytesIn, bytesOut *prometheus.Desc
	panics, refused             *prometheus.Desc
}

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.conns, c.accepted, c.requests, c.bytesIn, c.bytesOut, c.panics, c.refused} {
		ch <- d
	}
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.GaugeValue, float64(st.ConnectionsOpen))
	ch <- prometheus.MustNewConstMetric(c.accepted, prometheus.CounterValue, float64(st.ConnectionsAccepted))
	for key, n := range st.Requests {
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(n),
			strconv.Itoa(int(key)), kmsg.NameForKey(key))
	}
	ch <- prometheus.MustNewConstMetric(c.bytesIn, prometheus.CounterValue, float64(st.BytesIn))
	ch <- prometheus.MustNewConstMetric(c.bytesOut, prometheus.CounterValue, float64(st.BytesOut))
	ch <- prometheus.MustNewConstMetric(c.panics, prometheus.CounterValue, float64(st.Panics))
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(st.ConnectionsRefused))
}

// registerMetrics exposes the server's counters to Prometheus.
func registerMetrics(reg *prometheus.Registry, s *server.Server) {
	reg.MustRegister(&serverCollector{
		s:        s,
		conns:    prometheus.NewDesc("samsa_connections_open", "Kafka client connections open now.", nil, nil),
		accepted: prometheus.NewDesc("samsa_connections_accepted_total", "Kafka client connections accepted.", nil, nil),
		requests: prometheus.NewDesc("samsa_requests_total", "Kafka requests decoded, by API key.", []string{"api_key", "api"}, nil),
		bytesIn:  prometheus.NewDesc("samsa_request_bytes_total", "Request bytes read from clients.", nil, nil),
		bytesOut: prometheus.NewDesc("samsa_response_bytes_total", "Response bytes written to clients.", nil, nil),
		panics:   prometheus.NewDesc("samsa_handler_panics_total", "Request handler panics recovered (each closed its connection).", nil, nil),
		refused:  prometheus.NewDesc("samsa_connections_refused_total", "Connections closed by the connection limits (max.connections.per.ip, connection_creation_rate).", nil, nil),
	})
}

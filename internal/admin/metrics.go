package admin

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestTimes is one request's time in the connection loop, split as
// Kafka's RequestMetrics. Its fields match server.RequestTimes, so the
// wiring converts one into the other.
type RequestTimes struct {
	Queue, Local, ResponseQueue, Remote, Throttle, Send, Total time.Duration
}

// maxKey bounds the API keys with their own series; higher keys are
// counted under it.
const maxKey = 127

// Error codes from -1 (UNKNOWN_SERVER_ERROR) to maxErrorCode have their own
// counter; others are counted under maxErrorCode+1.
const maxErrorCode = 150

// phase indexes the request histograms.
const (
	phaseQueue = iota
	phaseLocal
	phaseResponseQueue
	phaseRemote
	phaseThrottle
	phaseSend
	phaseTotal
	phases
)

// Metrics holds the series that hot paths update: request latency and
// errors, fsync and append-to-durable latency, etcd requests, rebalances.
// Its methods are safe for concurrent use and do not allocate, once a
// series exists (the first observation of an API key creates its
// histograms).
type Metrics struct {
	reqVecs [phases]*prometheus.HistogramVec
	// req caches the histogram of each API key and phase.
	req  [maxKey + 1][phases]atomic.Pointer[prometheus.Histogram]
	errs [maxKey + 1][maxErrorCode + 3]atomic.Int64

	flush, appendToDurable prometheus.Histogram
	etcd                   *prometheus.HistogramVec
	etcdErrors             *prometheus.CounterVec
	rebalance              prometheus.Histogram

	errorsDesc *prometheus.Desc
}

// latencyBuckets cover 100µs to 30s.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewMetrics creates the hot-path series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{}
	phaseNames := [phases]struct{ name, help string }{
		{"samsa_request_queue_seconds", "Time from a request being read to its handler starting (Kafka RequestQueueTimeMs)."},
		{"samsa_request_local_seconds", "Time the handler worked on a request before any wait (Kafka LocalTimeMs)."},
		{"samsa_request_response_queue_seconds", "Time a handled request waited for the responses ahead of it (Kafka ResponseQueueTimeMs)."},
		{"samsa_request_remote_seconds", "Time a request waited for other replicas, durability or a fetch's data (Kafka RemoteTimeMs)."},
		{"samsa_request_throttle_seconds", "Quota throttle given with a response (Kafka ThrottleTimeMs)."},
		{"samsa_request_send_seconds", "Time encoding and writing a response (Kafka ResponseSendTimeMs)."},
		{"samsa_request_duration_seconds", "Time from a request being read to its response being written (Kafka TotalTimeMs)."},
	}
	for i, p := range phaseNames {
		m.reqVecs[i] = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: p.name, Help: p.help, Buckets: latencyBuckets}, []string{"api"})
		reg.MustRegister(m.reqVecs[i])
	}
	m.flush = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "samsa_log_flush_seconds", Help: "Time of one log's fsyncs in a group commit (Kafka LogFlushRateAndTimeMs).", Buckets: latencyBuckets})
	m.appendToDurable = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "samsa_log_append_to_durable_seconds", Help: "Time from the oldest append a flush covered to the end of that flush: how long records wait before the high watermark may include them.", Buckets: latencyBuckets})
	m.etcd = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "samsa_etcd_request_seconds", Help: "Time of etcd client requests, by gRPC method.", Buckets: latencyBuckets}, []string{"op"})
	m.etcdErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "samsa_etcd_request_errors_total", Help: "etcd client requests that failed, by gRPC method."}, []string{"op"})
	m.rebalance = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "samsa_group_rebalance_seconds", Help: "Time from a group's rebalance starting to the group being Stable (or Empty) again.",
		Buckets: []float64{.01, .05, .1, .5, 1, 3, 5, 10, 30, 60, 120, 300}})
	m.errorsDesc = prometheus.NewDesc("samsa_request_errors_total", "Error codes in responses, by API and error (Kafka ErrorsPerSec).", []string{"api", "error"}, nil)
	reg.MustRegister(m.flush, m.appendToDurable, m.etcd, m.etcdErrors, m.rebalance, errorCollector{m})
	return m
}

func clampKey(key int16) int {
	if key < 0 || key > maxKey {
		return maxKey
	}
	return int(key)
}

func (m *Metrics) histogram(key int, phase int) prometheus.Histogram {
	if h := m.req[key][phase].Load(); h != nil {
		return *h
	}
	h := m.reqVecs[phase].WithLabelValues(apiName(int16(key))).(prometheus.Histogram)
	m.req[key][phase].Store(&h)
	return h
}

// ObserveRequest records one request's times.
func (m *Metrics) ObserveRequest(key int16, t RequestTimes) {
	k := clampKey(key)
	m.histogram(k, phaseQueue).Observe(t.Queue.Seconds())
	m.histogram(k, phaseLocal).Observe(t.Local.Seconds())
	m.histogram(k, phaseResponseQueue).Observe(t.ResponseQueue.Seconds())
	m.histogram(k, phaseRemote).Observe(t.Remote.Seconds())
	m.histogram(k, phaseThrottle).Observe(t.Throttle.Seconds())
	m.histogram(k, phaseSend).Observe(t.Send.Seconds())
	m.histogram(k, phaseTotal).Observe(t.Total.Seconds())
}

// ObserveError counts one error code in a response to API key.
func (m *Metrics) ObserveError(key, code int16) {
	c := int(code) + 1
	if c < 0 || c > maxErrorCode+1 {
		c = maxErrorCode + 2
	}
	m.errs[clampKey(key)][c].Add(1)
}

// ObserveFlush records a log flush (storage.FlushObserver).
func (m *Metrics) ObserveFlush(sync, appendToDurable time.Duration) {
	m.flush.Observe(sync.Seconds())
	if appendToDurable > 0 {
		m.appendToDurable.Observe(appendToDurable.Seconds())
	}
}

// ObserveEtcd records an etcd request (cluster.EtcdObserver).
func (m *Metrics) ObserveEtcd(op string, d time.Duration, err error) {
	m.etcd.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.etcdErrors.WithLabelValues(op).Inc()
	}
}

// ObserveRebalance records the duration of a group rebalance.
func (m *Metrics) ObserveRebalance(d time.Duration) { m.rebalance.Observe(d.Seconds()) }

// errorCollector exposes Metrics.errs.
type errorCollector struct{ m *Metrics }

func (c errorCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.errorsDesc }

func (c errorCollector) Collect(ch chan<- prometheus.Metric) {
	for k := range c.m.errs {
		for i := range c.m.errs[k] {
			n := c.m.errs[k][i].Load()
			if n == 0 {
				continue
			}
			name := "UNKNOWN"
			if i <= maxErrorCode+1 {
				name = errorName(int16(i - 1))
			}
			ch <- prometheus.MustNewConstMetric(c.m.errorsDesc, prometheus.CounterValue, float64(n), apiName(int16(k)), name)
		}
	}
}

// apiName is Kafka's name of an API key ("Produce"), or its number.
func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" && n != "Unknown" {
		return n
	}
	return strconv.Itoa(int(key))
}

// errorName is Kafka's name of an error code (UNKNOWN_TOPIC_OR_PARTITION).
func errorName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e != nil {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

package config

import (
	"fmt"
	"sort"
	"strings"
)

// Kafka broker configs that samsa does not define fall in two groups.
//
// inertKafkaNames have no meaning in samsa: ZooKeeper's configs (samsa
// keeps its metadata in etcd), KRaft's metadata log, thread pools and
// buffers of Kafka's implementation, metrics reporters. A file that sets
// them loads, and Load warns once, listing them.
//
// refusedKafkaNames would change what the broker does if samsa honoured
// them (a principal builder, a topic policy, Kerberos), so a value other
// than Kafka's default is refused: ignoring it would leave the operator
// with a broker that behaves unlike the file says. Kafka's default value
// (listed with the name) is accepted as inert.
var inertKafkaNames = map[string]bool{
	"zookeeper.connect":                                true,
	"zookeeper.connection.timeout.ms":                  true,
	"zookeeper.session.timeout.ms":                     true,
	"zookeeper.max.in.flight.requests":                 true,
	"zookeeper.set.acl":                                true,
	"zookeeper.metadata.migration.enable":              true,
	"zookeeper.ssl.client.enable":                      true,
	"inter.broker.protocol.version":                    true,
	"log.message.format.version":                       true,
	"metadata.log.dir":                                 true,
	"metadata.log.segment.bytes":                       true,
	"metadata.log.segment.ms":                          true,
	"metadata.max.retention.bytes":                     true,
	"metadata.max.retention.ms":                        true,
	"controller.quorum.election.timeout.ms":            true,
	"controller.quorum.election.backoff.max.ms":        true,
	"controller.quorum.fetch.timeout.ms":               true,
	"controller.quorum.request.timeout.ms":             true,
	"controller.quorum.retry.backoff.ms":               true,
	"controller.quorum.append.linger.ms":               true,
	"controller.socket.timeout.ms":                     true,
	"background.threads":                               true,
	"num.replica.alter.log.dirs.threads":               true,
	"log.cleaner.dedupe.buffer.size":                   true,
	"log.cleaner.io.buffer.size":                       true,
	"log.cleaner.io.buffer.load.factor":                true,
	"log.cleaner.io.max.bytes.per.second":              true,
	"log.flush.scheduler.interval.ms":                  true,
	"log.flush.offset.checkpoint.interval.ms":          true,
	"log.flush.start.offset.checkpoint.interval.ms":    true,
	"replica.high.watermark.checkpoint.interval.ms":    true,
	"replica.socket.timeout.ms":                        true,
	"replica.socket.receive.buffer.bytes":              true,
	"replica.fetch.backoff.ms":                         true,
	"offsets.load.buffer.size":                         true,
	"offsets.commit.timeout.ms":                        true,
	"offsets.retention.check.interval.ms":              true,
	"transaction.state.log.load.buffer.size":           true,
	"socket.listen.backlog.size":                       true,
	"queued.max.request.bytes":                         true,
	"reserved.broker.max.id":                           true,
	"broker.id.generation.enable":                      true,
	"fetch.purgatory.purge.interval.requests":          true,
	"producer.purgatory.purge.interval.requests":       true,
	"delete.records.purgatory.purge.interval.requests": true,
	"metric.reporters":                                 true,
	"metrics.num.samples":                              true,
	"metrics.sample.window.ms":                         true,
	"metrics.recording.level":                          true,
	"kafka.metrics.reporters":                          true,
	"kafka.metrics.polling.interval.secs":              true,
}

// refusedKafkaNames maps each name to what honouring it would change and
// the values that change nothing (Kafka's default; "" for a null default).
var refusedKafkaNames = map[string]struct {
	what     string
	harmless []string
}{
	"principal.builder.class":                {"a principal builder", []string{"", "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"}},
	"sasl.kerberos.service.name":             {"SASL GSSAPI (Kerberos)", []string{""}},
	"sasl.kerberos.principal.to.local.rules": {"Kerberos principal mapping", []string{"", "DEFAULT"}},
	"create.topic.policy.class.name":         {"a CreateTopics policy", []string{""}},
	"alter.config.policy.class.name":         {"an AlterConfigs policy", []string{""}},
	"client.quota.callback.class":            {"a client quota callback", []string{""}},
	"remote.log.storage.system.enable":       {"tiered storage", []string{"false"}},
	"group.coordinator.rebalance.protocols":  {"group protocols other than classic and consumer (share groups)", []string{"classic,consumer", "consumer,classic", "classic", "consumer"}},
}

// loadNotes collects what Load accepted but did not apply.
type loadNotes struct {
	ignored []string // inert Kafka names that were set
}

// checkKafkaName handles a name samsa does not define: inert Kafka names
// are noted and accepted, refused ones and unknown ones are errors, an
// unknown one with a suggestion when it is a near miss.
func checkKafkaName(name, value string, notes *loadNotes) error {
	if inertKafkaNames[name] {
		if notes != nil {
			notes.ignored = append(notes.ignored, name)
		}
		return nil
	}
	if r, ok := refusedKafkaNames[name]; ok {
		v := strings.TrimSpace(value)
		for _, h := range r.harmless {
			if v == h {
				if notes != nil {
					notes.ignored = append(notes.ignored, name)
				}
				return nil
			}
		}
		return fmt.Errorf("%w: %s=%q sets %s, which samsa does not implement; ignoring it would change what the broker does, so remove it",
			ErrUnsupportedConfig, name, value, r.what)
	}
	if s := suggestBrokerName(name); s != "" {
		return fmt.Errorf("%w: %s (did you mean %s?)", ErrUnknownConfig, name, s)
	}
	return fmt.Errorf("%w: %s", ErrUnknownConfig, name)
}

// warnings turns the notes into the warnings a Broker carries.
func (n *loadNotes) warnings() []string {
	if n == nil || len(n.ignored) == 0 {
		return nil
	}
	names := append([]string(nil), n.ignored...)
	sort.Strings(names)
	names = compactStrings(names)
	return []string{"ignored Kafka configs that have no meaning in samsa: " + strings.Join(names, ", ")}
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// suggestBrokerName returns the broker config an unknown name most likely
// meant, or "": the broker form of a topic-level config (segment.bytes ->
// log.segment.bytes), else a broker config within two edits.
func suggestBrokerName(name string) string {
	if _, ok := LookupTopic(name); ok {
		var cands []string
		for _, d := range brokerDefs {
			if d.Topic == name {
				cands = append(cands, d.Name)
			}
		}
		sort.Strings(cands)
		for _, c := range cands {
			if strings.HasSuffix(c, "."+name) {
				return c
			}
		}
		if len(cands) > 0 {
			return cands[0]
		}
	}
	best, bestD := "", 3
	for _, d := range brokerDefs {
		if dist := editDistance(name, d.Name, bestD); dist < bestD {
			best, bestD = d.Name, dist
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max when it is
// max or more.
func editDistance(a, b string, max int) int {
	if d := len(a) - len(b); d >= max || -d >= max {
		return max
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= max {
			return max
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], max)
}

package console

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }

// configRow is one config with where its value comes from and the value
// it would have without that source.
type configRow struct {
	Name, Value, Source, Default string
	Sensitive, IsDefault         bool
}

func configSource(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "dynamic broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "dynamic cluster default"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "static broker"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "logger"
	case kmsg.ConfigSourceGroupConfig:
		return "group"
	}
	return "unknown"
}

func configRows(cs []kadm.Config) []configRow {
	out := make([]configRow, 0, len(cs))
	for _, c := range cs {
		r := configRow{Name: c.Key, Value: c.MaybeValue(), Source: configSource(c.Source), Sensitive: c.Sensitive,
			IsDefault: c.Source == kmsg.ConfigSourceDefaultConfig}
		if c.Sensitive {
			r.Value = "(sensitive)"
		}
		// The default is the value the next source down gives: the
		// first synonym that is not the config's own source.
		for _, syn := range c.Synonyms {
			if syn.Source != c.Source && syn.Value != nil {
				r.Default = *syn.Value
				break
			}
		}
		if r.IsDefault {
			r.Default = r.Value
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// topicRow is one topic of the topics list.
type topicRow struct {
	Name       string
	Internal   bool
	Partitions int
	RF         int
	Size       int64
	Under      int
	Rate       TopicRate
	Err        string
}

type topicsView struct {
	Query        string
	Internal     bool
	Topics       []topicRow
	Total, Shown int
	Errors       []string
}

// topics lists the topics, filtered by the query's substring.
func (s *Server) topics(rq *request) error {
	md, err := rq.adm.Metadata(rq.ctx)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	v := topicsView{Query: formValue(rq.r, "q"), Internal: rq.r.FormValue("internal") == "on"}
	dirs, err := rq.adm.DescribeAllLogDirs(rq.ctx, nil)
	if err != nil {
		v.Errors = append(v.Errors, "log dirs: "+err.Error())
	}
	sizes := map[string]int64{}
	for _, ds := range dirs {
		ds.EachPartition(func(p kadm.DescribedLogDirPartition) { sizes[p.Topic] += p.Size })
	}
	for _, t := range md.Topics.Sorted() {
		v.Total++
		if t.IsInternal && !v.Internal {
			continue
		}
		if v.Query != "" && !strings.Contains(strings.ToLower(t.Topic), strings.ToLower(v.Query)) {
			continue
		}
		r := topicRow{Name: t.Topic, Internal: t.IsInternal, Partitions: len(t.Partitions), Size: sizes[t.Topic], Rate: s.rates.topic(t.Topic)}
		if t.Err != nil {
			r.Err = t.Err.Error()
		}
		for _, p := range t.Partitions {
			r.RF = max(r.RF, len(p.Replicas))
			if len(p.ISR) < len(p.Replicas) {
				r.Under++
			}
		}
		v.Topics = append(v.Topics, r)
	}
	v.Shown = len(v.Topics)
	return rq.page(s, "topics", "Topics", v)
}

// parseConfigs reads name=value lines.
func parseConfigs(text string) (map[string]*string, error) {
	out := map[string]*string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, badRequest("config line %q: want name=value", line)
		}
		v = strings.TrimSpace(v)
		out[k] = &v
	}
	return out, nil
}

// createTopic creates a topic from the topics page's form.
func (s *Server) createTopic(rq *request) error {
	name := formValue(rq.r, "name")
	if name == "" {
		return badRequest("give the topic a name")
	}
	parts, err := intField(rq, "partitions", -1)
	if err != nil {
		return err
	}
	rf, err := intField(rq, "replication_factor", -1)
	if err != nil {
		return err
	}
	configs, err := parseConfigs(rq.r.FormValue("configs"))
	if err != nil {
		return err
	}
	resp, err := rq.adm.CreateTopic(rq.ctx, int32(parts), int16(rf), configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		msg := err.Error()
		if resp.ErrMessage != "" {
			msg += ": " + resp.ErrMessage
		}
		return rq.done(Prefix+"/topics", fmt.Sprintf("create topic %s: %s", name, msg), false)
	}
	return rq.done(Prefix+"/topic?name="+url.QueryEscape(name),
		fmt.Sprintf("created topic %s with %d partitions, replication factor %d", name, resp.NumPartitions, resp.ReplicationFactor), true)
}

// intField parses an integer form field; empty is def.
func intField(rq *request, name string, def int64) (int64, error) {
	v := formValue(rq.r, name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, badRequest("%s %q: not a number", name, v)
	}
	return n, nil
}

// partitionRow is one partition on the topic page.
type partitionRow struct {
	Partition        int32
	Leader           int32
	LeaderEpoch      int32
	Replicas, ISR    []int32
	Offline          []int32
	LogStart, LogEnd int64
	Size             int64
	Err              string
}

type consumerRow struct {
	Group string
	Lag   int64
	// Partitions counts the topic's partitions with a committed offset.
	Partitions int
}

type topicView struct {
	Name       string
	ID         string
	Internal   bool
	Partitions []partitionRow
	Configs    []configRow
	Consumers  []consumerRow
	Messages   int64
	Size       int64
	Errors     []string
}

func (s *Server) topic(rq *request) error {
	name := formValue(rq.r, "name")
	if name == "" {
		return badRequest("no topic named")
	}
	md, err := rq.adm.Metadata(rq.ctx, name)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	t, ok := md.Topics[name]
	if !ok || t.Err != nil {
		why := "not in the cluster's metadata"
		if ok {
			why = t.Err.Error()
		}
		return rq.page(s, "topic", name, topicView{Name: name, Errors: []string{"topic " + name + ": " + why}})
	}
	// Topic ids in Kafka's form: URL-safe base64 without padding, as
	// kafka-topics.sh and the broker's log print them.
	v := topicView{Name: name, ID: base64.RawURLEncoding.EncodeToString(t.ID[:]), Internal: t.IsInternal}
	starts, err := rq.adm.ListStartOffsets(rq.ctx, name)
	if err != nil {
		v.Errors = append(v.Errors, "log start offsets: "+err.Error())
	}
	ends, err := rq.adm.ListEndOffsets(rq.ctx, name)
	if err != nil {
		v.Errors = append(v.Errors, "log end offsets: "+err.Error())
	}
	set := kadm.TopicsSet{}
	for _, p := range t.Partitions {
		set.Add(name, p.Partition)
	}
	dirs, err := rq.adm.DescribeAllLogDirs(rq.ctx, set)
	if err != nil {
		v.Errors = append(v.Errors, "log dirs: "+err.Error())
	}
	for _, p := range t.Partitions.Sorted() {
		r := partitionRow{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: p.Replicas,
			ISR: p.ISR, Offline: p.OfflineReplicas, LogStart: -1, LogEnd: -1, Size: -1}
		if p.Err != nil {
			r.Err = p.Err.Error()
		}
		if o, ok := starts.Lookup(name, p.Partition); ok && o.Err == nil {
			r.LogStart = o.Offset
		}
		if o, ok := ends.Lookup(name, p.Partition); ok && o.Err == nil {
			r.LogEnd = o.Offset
		} else if ok && r.Err == "" {
			r.Err = o.Err.Error()
		}
		if r.LogStart >= 0 && r.LogEnd >= r.LogStart {
			v.Messages += r.LogEnd - r.LogStart
		}
		if ds, ok := dirs[p.Leader]; ok {
			if d, ok := ds.LookupPartition(name, p.Partition); ok {
				r.Size = d.Size
				v.Size += d.Size
			}
		}
		v.Partitions = append(v.Partitions, r)
	}
	rcs, err := rq.adm.DescribeTopicConfigs(rq.ctx, name)
	if err != nil {
		v.Errors = append(v.Errors, "configs: "+err.Error())
	}
	for _, rc := range rcs {
		v.Configs = append(v.Configs, configRows(rc.Configs)...)
	}
	v.Consumers, err = topicConsumers(rq, name, ends)
	if err != nil {
		v.Errors = append(v.Errors, "consumer groups: "+err.Error())
	}
	return rq.page(s, "topic", name, v)
}

// topicConsumers finds the groups with offsets committed on topic, and
// their lag against ends.
func topicConsumers(rq *request, topic string, ends kadm.ListedOffsets) ([]consumerRow, error) {
	listed, err := rq.adm.ListGroups(rq.ctx)
	if err != nil {
		return nil, err
	}
	fetched := rq.adm.FetchManyOffsets(rq.ctx, listed.Groups()...)
	var out []consumerRow
	var errs []string
	for g, r := range fetched {
		if r.Err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", g, r.Err))
			continue
		}
		ps, ok := r.Fetched[topic]
		if !ok {
			continue
		}
		c := consumerRow{Group: g}
		for p, o := range ps {
			if o.Err != nil || o.At < 0 {
				continue
			}
			c.Partitions++
			if e, ok := ends.Lookup(topic, p); ok && e.Err == nil {
				c.Lag += max(e.Offset-o.At, 0)
			}
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	if len(errs) > 0 {
		sort.Strings(errs)
		return out, errors.New(strings.Join(errs, "; "))
	}
	return out, nil
}

// deleteTopic deletes a topic once the form repeats its name.
func (s *Server) deleteTopic(rq *request) error {
	name := formValue(rq.r, "name")
	back := Prefix + "/topic?name=" + url.QueryEscape(name)
	if name == "" {
		return badRequest("no topic named")
	}
	if rq.r.PostFormValue("confirm") != name {
		return rq.done(back, "delete topic "+name+": type the topic's name to confirm", false)
	}
	resp, err := rq.adm.DeleteTopic(rq.ctx, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return rq.done(back, "delete topic "+name+": "+err.Error(), false)
	}
	return rq.done(Prefix+"/topics", "deleted topic "+name, true)
}

// addPartitions adds partitions to a topic.
func (s *Server) addPartitions(rq *request) error {
	name := formValue(rq.r, "name")
	back := Prefix + "/topic?name=" + url.QueryEscape(name)
	n, err := intField(rq, "count", 0)
	if err != nil {
		return err
	}
	if name == "" || n <= 0 {
		return badRequest("name a topic and a number of partitions to add (> 0)")
	}
	resps, err := rq.adm.CreatePartitions(rq.ctx, int(n), name)
	if err == nil {
		if r, ok := resps[name]; ok {
			err = r.Err
			if err != nil && r.ErrMessage != "" {
				err = fmt.Errorf("%w: %s", err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return rq.done(back, "add partitions: "+err.Error(), false)
	}
	return rq.done(back, fmt.Sprintf("added %d partitions to %s", n, name), true)
}

// alterTopicConfig sets a topic config, or removes the topic's own
// value so that the default applies again.
func (s *Server) alterTopicConfig(rq *request) error {
	name, key := formValue(rq.r, "name"), formValue(rq.r, "key")
	back := Prefix + "/topic?name=" + url.QueryEscape(name)
	if name == "" || key == "" {
		return badRequest("name a topic and a config")
	}
	ac := kadm.AlterConfig{Op: kadm.SetConfig, Name: key}
	if rq.r.PostFormValue("op") == "delete" {
		ac.Op = kadm.DeleteConfig
	} else {
		v := rq.r.PostFormValue("value")
		ac.Value = &v
	}
	resps, err := rq.adm.AlterTopicConfigs(rq.ctx, []kadm.AlterConfig{ac}, name)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = r.Err
				if r.ErrMessage != "" {
					err = fmt.Errorf("%w: %s", err, r.ErrMessage)
				}
			}
		}
	}
	if err != nil {
		return rq.done(back, "alter config "+key+": "+err.Error(), false)
	}
	if ac.Op == kadm.DeleteConfig {
		return rq.done(back, "config "+key+" of "+name+" reset to its default", true)
	}
	return rq.done(back, "config "+key+" of "+name+" set to "+*ac.Value, true)
}

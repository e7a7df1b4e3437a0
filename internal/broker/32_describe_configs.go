package broker

// DescribeConfigs: v0-4
//
// * v0: IsDefault per config in place of Source.
// * v1: IncludeSynonyms; Source per config (KIP-226).
// * v3: IncludeDocumentation and ConfigType (KIP-569).
// * v4: flexible versions.
//
// Resources: topics (2) and brokers (4). A topic's configs are listed with
// their effective values: the topic's override (DYNAMIC_TOPIC_CONFIG), else
// the broker config it derives from (dynamic for this node, dynamic cluster
// default, static), else the default. Broker loggers (8) are not served:
// INVALID_REQUEST.
//
// Groups (32, KIP-848/KIP-932 group configs): every group config with its
// effective value, for any group id, existing or not, as Kafka answers
// (an empty id is INVALID_REQUEST). The group's override has source
// GROUP_CONFIG; without one the value is the broker config it falls back
// to, with source DEFAULT_CONFIG as Kafka reports it, or
// STATIC_BROKER_CONFIG when the broker sets that config (Kafka says
// DEFAULT_CONFIG there too; samsa names the broker config as a synonym so
// that the operator sees where the value comes from). Group configs are
// never read-only.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/cluster"
	"samsa/internal/config"
)

// Kafka's config sources.
const (
	sourceTopic          kmsg.ConfigSource = 1 // DYNAMIC_TOPIC_CONFIG
	sourceDynamicBroker  kmsg.ConfigSource = 2 // DYNAMIC_BROKER_CONFIG
	sourceDynamicDefault kmsg.ConfigSource = 3 // DYNAMIC_DEFAULT_BROKER_CONFIG
	sourceStatic         kmsg.ConfigSource = 4 // STATIC_BROKER_CONFIG
	sourceDefault        kmsg.ConfigSource = 5 // DEFAULT_CONFIG
	sourceGroup          kmsg.ConfigSource = 8 // GROUP_CONFIG
)

// Kafka's resource types.
const (
	resourceTopic  kmsg.ConfigResourceType = 2
	resourceBroker kmsg.ConfigResourceType = 4
	resourceGroup  kmsg.ConfigResourceType = 32
)

type configSynonym struct {
	name   string
	value  *string
	source kmsg.ConfigSource
}

type configEntry struct {
	name      string
	value     *string
	readOnly  bool
	source    kmsg.ConfigSource
	sensitive bool
	typ       kmsg.ConfigType
	doc       string
	synonyms  []configSynonym
}

func (b *Broker) handleDescribeConfigs(req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.cluster.Image()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []configEntry
		switch rr.ResourceType {
		case resourceTopic:
			t := img.Topics[rr.ResourceName]
			if t == nil {
				sr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			entries = b.topicConfigEntries(img, t.Configs)
		case resourceBroker:
			if err := b.checkBrokerResource(rr.ResourceName); err != nil {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = errMessage(err)
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			entries = b.brokerConfigEntries(img, rr.ResourceName)
		case resourceGroup:
			if err := checkGroupResource(rr.ResourceName); err != nil {
				sr.ErrorCode = kerr.InvalidRequest.Code
				sr.ErrorMessage = errMessage(err)
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			entries = b.groupConfigEntries(img.GroupConfigs[rr.ResourceName])
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
			sr.ErrorMessage = errMessage(fmt.Errorf("resource type %d is not supported", rr.ResourceType))
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		var want map[string]bool
		if rr.ConfigNames != nil {
			want = make(map[string]bool, len(rr.ConfigNames))
			for _, n := range rr.ConfigNames {
				want[n] = true
			}
		}
		for _, e := range entries {
			if want != nil && !want[e.name] {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.name, e.value, e.readOnly, e.source, e.sensitive
			c.IsDefault = e.source == sourceDefault // v0's field in place of Source
			if req.Version >= 3 {
				c.ConfigType = e.typ
				if req.IncludeDocumentation {
					doc := e.doc
					c.Documentation = &doc
				}
			}
			if req.IncludeSynonyms {
				for _, s := range e.synonyms {
					cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					cs.Name, cs.Value, cs.Source = s.name, s.value, s.source
					if e.sensitive {
						cs.Value = nil
					}
					c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
				}
			}
			sr.Configs = append(sr.Configs, c)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// checkBrokerResource accepts "" (cluster-wide default) and this node's id.
func (b *Broker) checkBrokerResource(name string) error {
	if name == "" || name == strconv.Itoa(int(b.cfg.NodeID)) {
		return nil
	}
	return fmt.Errorf("broker %q is not this broker (%d)", name, b.cfg.NodeID)
}

// checkGroupResource refuses the empty group id: Kafka has no cluster-wide
// group config resource ("Default group resources are not allowed").
func checkGroupResource(name string) error {
	if name == "" {
		return errors.New("group name must not be empty")
	}
	return nil
}

// groupConfigEntries lists every group config with its effective value,
// source and synonyms, given the group's overrides.
func (b *Broker) groupConfigEntries(overrides map[string]string) []configEntry {
	defaults := b.cfg.GroupDefaults()
	var out []configEntry
	for _, d := range config.GroupDefs() {
		e := configEntry{name: d.Name, typ: configType(d.Type), doc: d.Doc}
		if v, ok := overrides[d.Name]; ok {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(v), sourceGroup})
		}
		fallback, _, _, _ := config.GroupFallback(d.Name)
		if _, ok := b.cfg.Raw[fallback]; ok {
			e.synonyms = append(e.synonyms, configSynonym{fallback, strPtr(defaults[d.Name]), sourceStatic})
		} else {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(defaults[d.Name]), sourceDefault})
		}
		first := e.synonyms[0]
		e.value, e.source = first.value, first.source
		out = append(out, e)
	}
	return out
}

// brokerSynonyms maps a topic config name to the broker configs it derives
// from, most specific first (log.retention.ms before log.retention.hours).
func brokerSynonyms() map[string][]config.Def {
	out := make(map[string][]config.Def)
	for _, d := range config.BrokerDefs() {
		if d.Topic != "" {
			out[d.Topic] = append(out[d.Topic], d)
		}
	}
	return out
}

// topicConfigEntries lists every topic config with its effective value,
// source and synonyms.
func (b *Broker) topicConfigEntries(img *cluster.Image, overrides map[string]string) []configEntry {
	syn := brokerSynonyms()
	defaults := b.cfg.TopicDefaults()
	node := strconv.Itoa(int(b.cfg.NodeID))
	var out []configEntry
	for _, d := range config.TopicDefs() {
		e := configEntry{name: d.Name, sensitive: d.Sensitive, typ: configType(d.Type), doc: d.Doc}
		if v, ok := overrides[d.Name]; ok {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(v), sourceTopic})
		}
		for _, bd := range syn[d.Name] {
			if v, ok := img.BrokerConfigs[node][bd.Name]; ok {
				e.synonyms = append(e.synonyms, configSynonym{bd.Name, strPtr(v), sourceDynamicBroker})
			}
			if v, ok := img.BrokerConfigs[""][bd.Name]; ok {
				e.synonyms = append(e.synonyms, configSynonym{bd.Name, strPtr(v), sourceDynamicDefault})
			}
			if v, ok := b.cfg.Raw[bd.Name]; ok {
				e.synonyms = append(e.synonyms, configSynonym{bd.Name, strPtr(v), sourceStatic})
			}
		}
		if v, ok := defaults[d.Name]; ok {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(v), sourceDefault})
		} else if !d.Null {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(d.Default), sourceDefault})
		} else {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, nil, sourceDefault})
		}
		first := e.synonyms[0]
		e.value, e.source = first.value, first.source
		if d.Sensitive {
			e.value = nil
		}
		out = append(out, e)
	}
	return out
}

// brokerConfigEntries lists every broker config with its value and source.
func (b *Broker) brokerConfigEntries(img *cluster.Image, resource string) []configEntry {
	node := strconv.Itoa(int(b.cfg.NodeID))
	var out []configEntry
	for _, d := range config.BrokerDefs() {
		e := configEntry{name: d.Name, readOnly: d.ReadOnly, sensitive: d.Sensitive, typ: configType(d.Type), doc: d.Doc}
		if resource != "" {
			if v, ok := img.BrokerConfigs[node][d.Name]; ok {
				e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(v), sourceDynamicBroker})
			}
		}
		if v, ok := img.BrokerConfigs[""][d.Name]; ok {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(v), sourceDynamicDefault})
		}
		if resource != "" {
			if v, ok := b.cfg.Raw[d.Name]; ok {
				e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(v), sourceStatic})
			}
		}
		if d.Null {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, nil, sourceDefault})
		} else {
			e.synonyms = append(e.synonyms, configSynonym{d.Name, strPtr(d.Default), sourceDefault})
		}
		if resource == "" && e.synonyms[0].source == sourceDefault {
			// The cluster-wide resource lists only what is set there.
			continue
		}
		first := e.synonyms[0]
		e.value, e.source = first.value, first.source
		if d.Sensitive {
			e.value = nil
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// configType maps a config type to Kafka's DescribeConfigs ConfigType.
func configType(t config.Type) kmsg.ConfigType {
	switch t {
	case config.TypeBoolean:
		return 1
	case config.TypeString:
		return 2
	case config.TypeInt:
		return 3
	case config.TypeShort:
		return 4
	case config.TypeLong:
		return 5
	case config.TypeDouble:
		return 6
	case config.TypeList:
		return 7
	case config.TypePassword:
		return 9
	}
	return 0
}

func strPtr(s string) *string { return &s }

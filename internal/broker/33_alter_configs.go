package broker

// AlterConfigs: v0-2
//
// * v2: flexible versions.
//
// The configs given replace every override the resource had (use
// IncrementalAlterConfigs to change one). Topics (2) store overrides in etcd;
// brokers (4, this node's id or "" for the cluster-wide default) store
// dynamic broker configs; read-only broker configs are refused with
// INVALID_REQUEST as Kafka does. Groups (32) store group configs in etcd,
// for any non-empty group id (Kafka's ConfigAdminManager takes GROUP in
// AlterConfigs too). ValidateOnly checks without writing.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/config"
)

func (b *Broker) handleAlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		configs := make(map[string]string, len(rr.Configs))
		for _, c := range rr.Configs {
			if c.Value != nil {
				configs[c.Name] = *c.Value
			}
		}
		code, err := b.alterConfigs(ctx, rr.ResourceType, rr.ResourceName, configs, req.ValidateOnly)
		sr.ErrorCode = errorCode(code)
		sr.ErrorMessage = errMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// alterConfigs validates configs as the complete set of overrides of a
// resource and, unless validateOnly, stores them.
func (b *Broker) alterConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string, configs map[string]string, validateOnly bool) (*kerr.Error, error) {
	img := b.cluster.Image()
	switch typ {
	case resourceTopic:
		if img.Topics[name] == nil {
			return kerr.UnknownTopicOrPartition, fmt.Errorf("unknown topic %q", name)
		}
		if err := config.ValidateTopic(configs); err != nil {
			return kerr.InvalidConfig, err
		}
		if _, err := b.topicConfig(img, configs); err != nil {
			return kerr.InvalidConfig, err
		}
		if validateOnly {
			return nil, nil
		}
		if err := b.cluster.SetTopicConfigs(ctx, name, configs); err != nil {
			return errCode(err), err
		}
		b.logConfigChanges("topic", name, img.Topics[name].Configs, configs, func(string) bool { return false })
	case resourceBroker:
		if err := b.checkBrokerResource(name); err != nil {
			return kerr.InvalidRequest, err
		}
		for k, v := range configs {
			d, ok := config.LookupBroker(k)
			if !ok {
				return kerr.InvalidConfig, fmt.Errorf("%w: %s", config.ErrUnknownConfig, k)
			}
			if d.ReadOnly {
				return kerr.InvalidRequest, fmt.Errorf("cannot update %s dynamically", k)
			}
			if err := d.Check(v); err != nil {
				return kerr.InvalidConfig, err
			}
		}
		if validateOnly {
			return nil, nil
		}
		if err := b.cluster.SetBrokerConfigs(ctx, name, configs); err != nil {
			return errCode(err), err
		}
		resource := name
		if resource == "" {
			resource = "<default>"
		}
		b.logConfigChanges("broker", resource, img.BrokerConfigs[name], configs, config.IsSensitive)
	case resourceGroup:
		if err := checkGroupResource(name); err != nil {
			return kerr.InvalidRequest, err
		}
		if err := b.cfg.ValidateGroup(configs); err != nil {
			return kerr.InvalidConfig, err
		}
		if validateOnly {
			return nil, nil
		}
		if err := b.cluster.SetGroupConfigs(ctx, name, configs); err != nil {
			return errCode(err), err
		}
		b.logConfigChanges("group", name, img.GroupConfigs[name], configs, func(string) bool { return false })
	default:
		return kerr.InvalidRequest, fmt.Errorf("resource type %d is not supported", typ)
	}
	return nil, nil
}

// logConfigChanges logs, one INFO line each, the configs whose override
// differs between before and after. The old and new values of a sensitive
// config are never logged; they show as [hidden] (unset stays "").
func (b *Broker) logConfigChanges(typ, resource string, before, after map[string]string, sensitive func(string) bool) {
	names := make([]string, 0, len(before)+len(after))
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			names = append(names, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		old, had := before[k]
		v, has := after[k]
		if sensitive(k) {
			old, v = maskConfig(old, had), maskConfig(v, has)
		}
		b.log.Info("broker: config changed", "resource_type", typ, "resource", resource, "config", k,
			"old", old, "new", v, "was_set", had, "is_set", has)
	}
}

func maskConfig(v string, set bool) string {
	if !set {
		return ""
	}
	return "[hidden]"
}

// currentOverrides returns a copy of a resource's stored overrides.
func (b *Broker) currentOverrides(typ kmsg.ConfigResourceType, name string) (map[string]string, *kerr.Error, error) {
	img := b.cluster.Image()
	var src map[string]string
	switch typ {
	case resourceTopic:
		t := img.Topics[name]
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition, fmt.Errorf("unknown topic %q", name)
		}
		src = t.Configs
	case resourceBroker:
		if err := b.checkBrokerResource(name); err != nil {
			return nil, kerr.InvalidRequest, err
		}
		src = img.BrokerConfigs[name]
	case resourceGroup:
		if err := checkGroupResource(name); err != nil {
			return nil, kerr.InvalidRequest, err
		}
		src = img.GroupConfigs[name]
	default:
		return nil, kerr.InvalidRequest, fmt.Errorf("resource type %d is not supported", typ)
	}
	out := make(map[string]string, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out, nil, nil
}

// Incremental operations (KIP-339).
const (
	opSet      int8 = 0
	opDelete   int8 = 1
	opAppend   int8 = 2
	opSubtract int8 = 3
)

// applyIncremental applies one operation to the overrides in configs.
func (b *Broker) applyIncremental(typ kmsg.ConfigResourceType, configs map[string]string, name string, op int8, value *string) error {
	var d config.Def
	var ok bool
	switch typ {
	case resourceTopic:
		d, ok = config.LookupTopic(name)
	case resourceGroup:
		d, ok = config.LookupGroup(name)
	default:
		d, ok = config.LookupBroker(name)
	}
	if !ok {
		return fmt.Errorf("%w: %s", config.ErrUnknownConfig, name)
	}
	switch op {
	case opSet:
		if value == nil {
			return fmt.Errorf("%w: %s: null value", config.ErrInvalidConfig, name)
		}
		configs[name] = *value
	case opDelete:
		delete(configs, name)
	case opAppend, opSubtract:
		if d.Type != config.TypeList {
			return fmt.Errorf("%w: %s is not a list; APPEND and SUBTRACT need one", config.ErrInvalidConfig, name)
		}
		if value == nil {
			return fmt.Errorf("%w: %s: null value", config.ErrInvalidConfig, name)
		}
		cur, set := configs[name]
		if !set {
			cur = d.Default
		}
		items := splitList(cur)
		for _, v := range splitList(*value) {
			i := indexOf(items, v)
			if op == opAppend && i < 0 {
				items = append(items, v)
			}
			if op == opSubtract && i >= 0 {
				items = append(items[:i], items[i+1:]...)
			}
		}
		configs[name] = strings.Join(items, ",")
	default:
		return fmt.Errorf("%w: unknown operation %d", config.ErrInvalidConfig, op)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

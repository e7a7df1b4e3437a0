package broker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/record"
	"samsa/internal/testutil"
)

// createTopicRaw sends one CreateTopics request for name and returns the
// topic's error code.
func createTopicRaw(t *testing.T, cl *kgo.Client, name string, partitions int32, rf int16, validateOnly bool, configs map[string]string) int16 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.CreateTopicsResponse](t, cl, req)
	if len(resp.Topics) != 1 {
		t.Fatalf("create topics: %d topics in response", len(resp.Topics))
	}
	return resp.Topics[0].ErrorCode
}

// metadataTopic returns the Metadata answer for one topic, by name or (name
// empty) by id, without auto-creation.
func metadataTopic(t *testing.T, cl *kgo.Client, name string, id [16]byte) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	if name != "" {
		rt.Topic = kmsg.StringPtr(name)
	} else {
		rt.TopicID = id
	}
	req.Topics = append(req.Topics, rt)
	resp := request[*kmsg.MetadataResponse](t, cl, req)
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata: %d topics in response", len(resp.Topics))
	}
	return resp.Topics[0]
}

func TestCreateTopicsRefusesInvalidRequests(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	if code := createTopicRaw(t, cl, "a.b", 1, 1, false, nil); code != 0 {
		t.Fatalf("create a.b: error %d", code)
	}
	for _, c := range []struct {
		name         string
		topic        string
		partitions   int32
		rf           int16
		validateOnly bool
		configs      map[string]string
		want         *kerr.Error
	}{
		{name: "empty name", topic: "", want: kerr.InvalidTopicException},
		{name: "dot", topic: ".", want: kerr.InvalidTopicException},
		{name: "dot dot", topic: "..", want: kerr.InvalidTopicException},
		{name: "250 characters", topic: strings.Repeat("x", 250), want: kerr.InvalidTopicException},
		{name: "slash", topic: "a/b", want: kerr.InvalidTopicException},
		{name: "collides with a.b", topic: "a_b", want: kerr.InvalidTopicException},
		{name: "exists", topic: "a.b", want: kerr.TopicAlreadyExists},
		{name: "replication factor 2 on one broker", topic: "rf2", rf: 2, want: kerr.InvalidReplicationFactor},
		{name: "zero partitions", topic: "p0", partitions: 0, want: kerr.InvalidPartitions},
		{name: "unknown config", topic: "badcfg", configs: map[string]string{"no.such.config": "1"}, want: kerr.InvalidConfig},
		{name: "invalid config value", topic: "badval", configs: map[string]string{"retention.ms": "soon"}, want: kerr.InvalidConfig},
		{name: "validate only", topic: "dry", validateOnly: true},
		{name: "249 characters", topic: strings.Repeat("y", 249)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.partitions == 0 && c.want != kerr.InvalidPartitions {
				c.partitions = 1
			}
			if c.rf == 0 {
				c.rf = 1
			}
			code := createTopicRaw(t, cl, c.topic, c.partitions, c.rf, c.validateOnly, c.configs)
			if want := int16(0); c.want != nil {
				want = c.want.Code
				if code != want {
					t.Fatalf("error %v, want %v", kerr.ErrorForCode(code), c.want)
				}
			} else if code != 0 {
				t.Fatalf("error %v, want none", kerr.ErrorForCode(code))
			}
			exists := c.topic != "" && metadataTopic(t, cl, c.topic, [16]byte{}).ErrorCode == 0
			if wantExists := c.want == kerr.TopicAlreadyExists || (c.want == nil && !c.validateOnly); exists != wantExists {
				t.Fatalf("topic %q exists afterwards: %v, want %v", c.topic, exists, wantExists)
			}
		})
	}
}

func TestDeleteTopicsByNameAndIDRemovesTopicAndData(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	adm := b.Admin()
	for _, name := range []string{"del-name", "del-id"} {
		testutil.CreateTopic(t, adm, name, 2)
		produceSync(t, producer(t, b), &kgo.Record{Topic: name, Partition: 1, Value: []byte("x")})
		if _, err := os.Stat(filepath.Join(b.Dir, name+"-1")); err != nil {
			t.Fatalf("partition dir before delete: %v", err)
		}
	}
	id := topicID(t, cl, "del-id")

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	byName := kmsg.NewDeleteTopicsRequestTopic()
	byName.Topic = kmsg.StringPtr("del-name")
	byID := kmsg.NewDeleteTopicsRequestTopic()
	byID.TopicID = id
	unknownID := kmsg.NewDeleteTopicsRequestTopic()
	unknownID.TopicID = [16]byte{1, 2, 3}
	unknownName := kmsg.NewDeleteTopicsRequestTopic()
	unknownName.Topic = kmsg.StringPtr("never-was")
	req.Topics = append(req.Topics, byName, byID, unknownID, unknownName)
	resp := request[*kmsg.DeleteTopicsResponse](t, cl, req)
	if resp.Version < 6 {
		t.Fatalf("DeleteTopics sent at v%d; this test needs v6 (topic ids)", resp.Version)
	}
	want := []int16{0, 0, kerr.UnknownTopicID.Code, kerr.UnknownTopicOrPartition.Code}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d topics in response, want %d", len(resp.Topics), len(want))
	}
	for i, w := range want {
		if got := resp.Topics[i].ErrorCode; got != w {
			t.Fatalf("topic %d: error %v, want %v", i, kerr.ErrorForCode(got), kerr.ErrorForCode(w))
		}
	}
	if n := resp.Topics[1].Topic; n == nil || *n != "del-id" {
		t.Fatalf("delete by id answered with name %v, want del-id", n)
	}

	for _, name := range []string{"del-name", "del-id"} {
		if code := metadataTopic(t, cl, name, [16]byte{}).ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("metadata for deleted %s: error %v", name, kerr.ErrorForCode(code))
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			ents, err := os.ReadDir(b.Dir)
			if err != nil {
				return err
			}
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), name+"-") {
					return testutil.Errorf("%s still in the data dir", e.Name())
				}
			}
			return nil
		})
	}
	if code := metadataTopic(t, cl, "", id).ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Fatalf("metadata by the deleted id: error %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(code))
	}
	// The name is free again, and the new topic starts empty. (A fresh
	// client: cl's cached metadata still says the topic is gone.)
	testutil.CreateTopic(t, adm, "del-name", 1)
	if off, _, code := listOffset(t, b.Client(), "del-name", 0, -1); code != 0 || off != 0 {
		t.Fatalf("recreated topic: latest offset %d (error %d), want 0", off, code)
	}
}

func TestCreatePartitionsGrowsTopicAndNewPartitionIsWritable(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	adm := b.Admin()
	topic := "grow"
	testutil.CreateTopic(t, adm, topic, 1)
	resp, err := adm.CreatePartitions(ctxT(t, 10*time.Second), 2, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resp[topic]; !ok || r.Err != nil {
		t.Fatalf("create partitions: %+v", resp)
	}
	if n := len(metadataTopic(t, cl, topic, [16]byte{}).Partitions); n != 3 {
		t.Fatalf("%d partitions after growing by 2, want 3", n)
	}
	sp := produceRaw(t, cl, -1, topic, 2, buildBatch(t, record.CodecNone, 2, time.Now().UnixMilli()))
	if sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("produce to new partition 2: error %d, base offset %d", sp.ErrorCode, sp.BaseOffset)
	}
	got := consumeAll(t, b.Addr(), topic, 3, 2)
	if len(got[2]) != 2 {
		t.Fatalf("consumed %d records from partition 2, want 2", len(got[2]))
	}
	// Shrinking or keeping the count is refused.
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, 3
	req.Topics = append(req.Topics, rt)
	cp := request[*kmsg.CreatePartitionsResponse](t, cl, req)
	if code := cp.Topics[0].ErrorCode; code != kerr.InvalidPartitions.Code {
		t.Fatalf("create partitions to the same count: error %v, want INVALID_PARTITIONS", kerr.ErrorForCode(code))
	}
}

// describeTopic returns name -> (value, source) for a topic's configs.
func describeConfigs(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	resp := request[*kmsg.DescribeConfigsResponse](t, cl, req)
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe configs %s: %+v", name, resp.Resources)
	}
	out := make(map[string]kmsg.DescribeConfigsResponseResourceConfig)
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

func checkConfig(t *testing.T, cfgs map[string]kmsg.DescribeConfigsResponseResourceConfig, name, value string, source kmsg.ConfigSource) {
	t.Helper()
	c, ok := cfgs[name]
	if !ok {
		t.Fatalf("config %s not described", name)
	}
	if c.Value == nil || *c.Value != value || c.Source != source {
		v := "<nil>"
		if c.Value != nil {
			v = *c.Value
		}
		t.Fatalf("config %s = %q source %v, want %q source %v", name, v, c.Source, value, source)
	}
}

func TestConfigsDescribeAlterAndIncrementalAlter(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	topic := "cfg"
	testutil.CreateTopic(t, b.Admin(), topic, 1, "retention.ms=12345")
	const (
		topicRes  kmsg.ConfigResourceType = 2
		brokerRes kmsg.ConfigResourceType = 4
	)

	cfgs := describeConfigs(t, cl, topicRes, topic)
	checkConfig(t, cfgs, "retention.ms", "12345", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cfgs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
	if bc := describeConfigs(t, cl, brokerRes, "0"); len(bc) == 0 {
		t.Fatal("broker 0 describes no configs")
	} else if _, ok := bc["log.retention.check.interval.ms"]; !ok {
		t.Fatal("broker 0 does not describe log.retention.check.interval.ms")
	}

	// AlterConfigs replaces every override.
	alter := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = topicRes, topic
	ac := kmsg.NewAlterConfigsRequestResourceConfig()
	ac.Name, ac.Value = "retention.bytes", kmsg.StringPtr("777777")
	ar.Configs = append(ar.Configs, ac)
	alter.Resources = append(alter.Resources, ar)
	if r := request[*kmsg.AlterConfigsResponse](t, cl, alter); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter configs: error %d", r.Resources[0].ErrorCode)
	}
	cfgs = describeConfigs(t, cl, topicRes, topic)
	checkConfig(t, cfgs, "retention.bytes", "777777", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "retention.ms", "604800000", kmsg.ConfigSourceDefaultConfig)

	incr := func(ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) int16 {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = topicRes, topic
		rr.Configs = ops
		req.Resources = append(req.Resources, rr)
		return request[*kmsg.IncrementalAlterConfigsResponse](t, cl, req).Resources[0].ErrorCode
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, o, value
		return c
	}
	if code := incr(
		op("retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("54321")),
		op("retention.bytes", kmsg.IncrementalAlterConfigOpDelete, nil),
		op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("compact")),
	); code != 0 {
		t.Fatalf("incremental alter: error %v", kerr.ErrorForCode(code))
	}
	cfgs = describeConfigs(t, cl, topicRes, topic)
	checkConfig(t, cfgs, "retention.ms", "54321", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cfgs, "retention.bytes", "-1", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cfgs, "cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig)

	// Errors change nothing: an unknown config, APPEND on a non-list.
	if code := incr(op("no.such", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1"))); code != kerr.InvalidConfig.Code {
		t.Fatalf("set unknown config: error %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	if code := incr(op("retention.ms", kmsg.IncrementalAlterConfigOpAppend, kmsg.StringPtr("1"))); code != kerr.InvalidConfig.Code {
		t.Fatalf("append to retention.ms: error %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	checkConfig(t, describeConfigs(t, cl, topicRes, topic), "retention.ms", "54321", kmsg.ConfigSourceDynamicTopicConfig)
}

// TestAlteredRetentionTakesEffectOnTheLog lowers retention.bytes of a live
// topic and expects the log start offset to move: the change reaches the
// log, not only DescribeConfigs.
func TestAlteredRetentionTakesEffectOnTheLog(t *testing.T) {
	b := testutil.StartBroker(t, "log.retention.check.interval.ms=100")
	adm := b.Admin()
	topic := "cfg-live"
	testutil.CreateTopic(t, adm, topic, 1, "segment.bytes=16384")
	cl := producer(t, b, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < 5; i++ {
		produceFill(t, cl, topic, 20, 1024, time.Time{})
	}
	if lso, err := startOffset(t, adm, topic, 0); err != nil || lso != 0 {
		t.Fatalf("log start offset %d (%v) before the change, want 0", lso, err)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = 2, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.bytes", kmsg.StringPtr("20000")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	if code := request[*kmsg.IncrementalAlterConfigsResponse](t, b.Client(), req).Resources[0].ErrorCode; code != 0 {
		t.Fatalf("incremental alter: error %d", code)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		lso, err := startOffset(t, adm, topic, 0)
		if err == nil && lso == 0 {
			err = testutil.Errorf("log start offset still 0")
		}
		return err
	})
}

func TestDescribeClusterAndLogDirs(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	topic := "dirs"
	testutil.CreateTopic(t, b.Admin(), topic, 2)
	produceSync(t, producer(t, b), &kgo.Record{Topic: topic, Partition: 1, Value: []byte("some bytes")})

	dc := request[*kmsg.DescribeClusterResponse](t, cl, kmsg.NewPtrDescribeClusterRequest())
	if dc.ErrorCode != 0 || dc.ClusterID == "" || len(dc.Brokers) != 1 || dc.ControllerID != dc.Brokers[0].NodeID {
		t.Fatalf("describe cluster: error %d, cluster %q, %d brokers, controller %d", dc.ErrorCode, dc.ClusterID, len(dc.Brokers), dc.ControllerID)
	}
	if addr := b.Addr(); !strings.HasSuffix(addr, ":"+itoa(dc.Brokers[0].Port)) {
		t.Fatalf("broker port %d, listener %s", dc.Brokers[0].Port, addr)
	}

	ld := request[*kmsg.DescribeLogDirsResponse](t, cl, kmsg.NewPtrDescribeLogDirsRequest())
	if len(ld.Dirs) != 1 || ld.Dirs[0].ErrorCode != 0 {
		t.Fatalf("describe log dirs: %+v", ld.Dirs)
	}
	sizes := map[int32]int64{}
	for _, dt := range ld.Dirs[0].Topics {
		if dt.Topic == topic {
			for _, p := range dt.Partitions {
				sizes[p.Partition] = p.Size
			}
		}
	}
	if len(sizes) != 2 || sizes[1] <= 0 || sizes[0] != 0 {
		t.Fatalf("log dir sizes %v, want partition 1 > 0 and partition 0 empty", sizes)
	}
}

func TestMetadataByTopicIDAndAutoCreate(t *testing.T) {
	b := testutil.StartBroker(t)
	cl := b.Client()
	testutil.CreateTopic(t, b.Admin(), "known", 3)
	id := topicID(t, cl, "known")

	mt := metadataTopic(t, cl, "", id)
	if mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "known" || len(mt.Partitions) != 3 {
		t.Fatalf("metadata by id: error %d, topic %v, %d partitions", mt.ErrorCode, mt.Topic, len(mt.Partitions))
	}

	// Metadata that allows auto-creation creates an unknown topic.
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto-meta")
	req.Topics = append(req.Topics, rt)
	request[*kmsg.MetadataResponse](t, cl, req)
	testutil.Eventually(t, 5*time.Second, func() error {
		if code := metadataTopic(t, cl, "auto-meta", [16]byte{}).ErrorCode; code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	// Without permission it does not.
	if code := metadataTopic(t, cl, "not-auto", [16]byte{}).ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata without auto-create: error %v", kerr.ErrorForCode(code))
	}

	// Producing to an unknown topic with a client that allows
	// auto-creation creates it and the record lands at offset 0.
	pc := producer(t, b, kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.StickyPartitioner()))
	res := pc.ProduceSync(ctxT(t, 15*time.Second), &kgo.Record{Topic: "auto-produce", Value: []byte("v")})
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce to an unknown topic: %v", err)
	}
	if r := res[0].Record; r.Offset != 0 {
		t.Fatalf("auto-created topic: offset %d, want 0", r.Offset)
	}
	if n := len(metadataTopic(t, cl, "auto-produce", [16]byte{}).Partitions); n != 1 {
		t.Fatalf("auto-created topic has %d partitions, want num.partitions=1", n)
	}
}

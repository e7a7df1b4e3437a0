package broker_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/testutil"
)

// TestMessageFormatV1VersionsRefusedClearly: Produce v0-2 and Fetch v0-3
// carry message formats v0/v1, which samsa does not serve. They are
// answered with UNSUPPORTED_VERSION in every partition rather than a
// dropped connection (a client pinned to them reports that), nothing is
// written, an acks=0 Produce v0 has its connection closed (its client
// waits for no answer), and ApiVersions does not list them.
func TestMessageFormatV1VersionsRefusedClearly(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t)
	const topic = "old-formats"
	testutil.CreateTopic(t, b.Admin(), topic, 1)

	for _, v := range []int16{0, 1, 2} {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = buildBatch(t, 0, 3, time.Now().UnixMilli())
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest(t, b.Addr(), req).(*kmsg.ProduceResponse)
		if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.UnsupportedVersion.Code {
			t.Errorf("Produce v%d: %v, want UNSUPPORTED_VERSION", v, kerr.ErrorForCode(c))
		}
	}
	for _, v := range []int16{0, 1, 2, 3} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = v, -1, 100, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest(t, b.Addr(), req).(*kmsg.FetchResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnsupportedVersion.Code || len(p.RecordBatches) != 0 {
			t.Errorf("Fetch v%d: %v with %d bytes, want UNSUPPORTED_VERSION and none", v, kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
		}
	}

	// acks=0 at v0: the connection is closed, no answer.
	c := dialRaw(t, b.Addr(), "old")
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 0, 0, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = buildBatch(t, 0, 3, time.Now().UnixMilli())
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	c.send(req)
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var one [1]byte
	_, err := c.r.Read(one[:])
	var ne net.Error
	if !errors.Is(err, io.EOF) && (!errors.As(err, &ne) || ne.Timeout()) {
		t.Errorf("acks=0 Produce v0: read %v, want the connection closed", err)
	}

	if leo, _, code := listOffset(t, b.Client(), topic, 0, -1); code != 0 || leo != 0 {
		t.Fatalf("log end %d (error %d) after refused produces, want 0", leo, code)
	}
	av := rawRequest(t, b.Addr(), kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, k := range av.ApiKeys {
		if (k.ApiKey == 0 && k.MinVersion != 3) || (k.ApiKey == 1 && k.MinVersion != 4) {
			t.Errorf("ApiVersions lists key %d from v%d", k.ApiKey, k.MinVersion)
		}
	}
	// A client at the served versions still works on the same broker.
	produceSync(t, producer(t, b), &kgo.Record{Topic: topic, Value: []byte("v2 format")})
}

// TestOldAdminVersionsServed: v0 of OffsetFetch, CreateTopics,
// DeleteTopics, DescribeConfigs and DescribeLogDirs, which Kafka 3.9
// served and older tools still send, are answered as their v1 (and
// DescribeConfigs v0 with IsDefault).
func TestOldAdminVersionsServed(t *testing.T) {
	t.Parallel()
	b := testutil.StartBroker(t, groupBrokerConfig...)
	const topic = "old-admin"

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = 0, 10000
	rct := kmsg.NewCreateTopicsRequestTopic()
	rct.Topic, rct.NumPartitions, rct.ReplicationFactor = topic, 2, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("123456789")
	rct.Configs = append(rct.Configs, cfg)
	ct.Topics = append(ct.Topics, rct)
	if c := rawRequest(t, b.Addr(), ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; c != 0 {
		t.Fatalf("CreateTopics v0: %v", kerr.ErrorForCode(c))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := b.Admin().Metadata(ctxT(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		if d := md.Topics[topic]; d.Err != nil || len(d.Partitions) != 2 {
			return testutil.Errorf("topic %s: %v, %d partitions", topic, d.Err, len(d.Partitions))
		}
		return nil
	})

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = 0
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	dc.Resources = append(dc.Resources, res)
	dr := rawRequest(t, b.Addr(), dc).(*kmsg.DescribeConfigsResponse)
	seen := 0
	for _, c := range dr.Resources[0].Configs {
		switch c.Name {
		case "retention.ms":
			seen++
			if c.IsDefault || c.Value == nil || *c.Value != "123456789" {
				t.Errorf("DescribeConfigs v0 retention.ms: %v default %v, want 123456789, not default", c.Value, c.IsDefault)
			}
		case "segment.bytes":
			seen++
			if !c.IsDefault {
				t.Errorf("DescribeConfigs v0 segment.bytes: not default")
			}
		}
	}
	if seen != 2 {
		t.Fatalf("DescribeConfigs v0 listed %d of retention.ms and segment.bytes", seen)
	}

	// A group's committed offset, read with OffsetFetch v0.
	const groupID = "old-admin-group"
	cl := b.Client()
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = groupID, -1
	rtc := kmsg.NewOffsetCommitRequestTopic()
	rtc.Topic = topic
	rpc := kmsg.NewOffsetCommitRequestTopicPartition()
	rpc.Partition, rpc.Offset = 1, 42
	rtc.Partitions = append(rtc.Partitions, rpc)
	oc.Topics = append(oc.Topics, rtc)
	testutil.Eventually(t, 20*time.Second, func() error {
		return kerr.ErrorForCode(request[*kmsg.OffsetCommitResponse](t, cl, oc).Topics[0].Partitions[0].ErrorCode)
	})
	v0 := pinned(t, b, 9, 0)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = groupID
	rtf := kmsg.NewOffsetFetchRequestTopic()
	rtf.Topic, rtf.Partitions = topic, []int32{0, 1}
	of.Topics = append(of.Topics, rtf)
	ofr := request[*kmsg.OffsetFetchResponse](t, v0, of)
	if ofr.Version != 0 {
		t.Fatalf("OffsetFetch answered at v%d, want v0", ofr.Version)
	}
	for _, p := range ofr.Topics[0].Partitions {
		want := map[int32]int64{0: -1, 1: 42}[p.Partition]
		if p.ErrorCode != 0 || p.Offset != want {
			t.Errorf("OffsetFetch v0 partition %d: %v offset %d, want %d", p.Partition, kerr.ErrorForCode(p.ErrorCode), p.Offset, want)
		}
	}

	ld := kmsg.NewPtrDescribeLogDirsRequest()
	ld.Version = 0
	ldr := rawRequest(t, b.Addr(), ld).(*kmsg.DescribeLogDirsResponse)
	found := 0
	for _, d := range ldr.Dirs {
		for _, tp := range d.Topics {
			if tp.Topic == topic {
				found += len(tp.Partitions)
			}
		}
	}
	if found != 2 {
		t.Fatalf("DescribeLogDirs v0 lists %d partitions of %s, want 2", found, topic)
	}

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version, dt.TimeoutMillis, dt.TopicNames = 0, 10000, []string{topic}
	if c := rawRequest(t, b.Addr(), dt).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; c != 0 {
		t.Fatalf("DeleteTopics v0: %v", kerr.ErrorForCode(c))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		md, err := b.Admin().Metadata(ctxT(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		if d, ok := md.Topics[topic]; ok && d.Err == nil {
			return testutil.Errorf("topic %s still there", topic)
		}
		return nil
	})
}

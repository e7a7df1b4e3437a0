package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// confluentSummary is what testdata/confluent_roundtrip.py prints.
type confluentSummary struct {
	Delivered []struct {
		I         int   `json:"i"`
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"delivered"`
	DeliveryErrors []string `json:"delivery_errors"`
	Unflushed      int      `json:"unflushed"`
	Consumed       []struct {
		Partition int32      `json:"partition"`
		Offset    int64      `json:"offset"`
		Key       *string    `json:"key"`
		Value     *string    `json:"value"`
		Headers   [][]string `json:"headers"`
	} `json:"consumed"`
}

// TestConfluentPythonRoundTrip runs a confluent-kafka-python producer
// (acks=all) and an assign()-only consumer against the broker and checks
// every record came back once, in order per partition, with its key,
// value and headers, at the offset its delivery report gave.
func TestConfluentPythonRoundTrip(t *testing.T) {
	python := requireConfluentPython(t)
	b := newBroker(t)
	const (
		topic      = "confluent-rt"
		partitions = 3
		count      = 600
	)
	createTopic(t, b.addr(), topic, partitions, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "testdata/confluent_roundtrip.py",
		b.addr(), topic, strconv.Itoa(partitions), strconv.Itoa(count))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("confluent_roundtrip.py: %v\nstderr:\n%s", err, stderr.String())
	}
	var sum confluentSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("summary: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	if len(sum.DeliveryErrors) > 0 || sum.Unflushed != 0 {
		t.Fatalf("delivery errors %v, %d unflushed", sum.DeliveryErrors, sum.Unflushed)
	}
	if len(sum.Delivered) != count {
		t.Fatalf("%d delivery reports, want %d", len(sum.Delivered), count)
	}
	type pos struct {
		p int32
		o int64
	}
	deliveredAt := make(map[pos]int)
	for _, d := range sum.Delivered {
		if want := int32(d.I % partitions); d.Partition != want {
			t.Fatalf("record %d delivered to partition %d, want %d", d.I, d.Partition, want)
		}
		if prev, dup := deliveredAt[pos{d.Partition, d.Offset}]; dup {
			t.Fatalf("records %d and %d both delivered at %d/%d", prev, d.I, d.Partition, d.Offset)
		}
		deliveredAt[pos{d.Partition, d.Offset}] = d.I
	}

	if len(sum.Consumed) != count {
		t.Fatalf("consumed %d records, want %d", len(sum.Consumed), count)
	}
	lastIdx := make(map[int32]int)
	lastOff := make(map[int32]int64)
	perPartition := make(map[int32]int)
	for _, c := range sum.Consumed {
		if c.Key == nil || c.Value == nil || !strings.HasPrefix(*c.Key, "key-") {
			t.Fatalf("record at %d/%d has key %v value %v", c.Partition, c.Offset, c.Key, c.Value)
		}
		i, err := strconv.Atoi(strings.TrimPrefix(*c.Key, "key-"))
		if err != nil {
			t.Fatalf("key %q: %v", *c.Key, err)
		}
		if want := int32(i % partitions); c.Partition != want {
			t.Fatalf("record %d read from partition %d, want %d", i, c.Partition, want)
		}
		if d, ok := deliveredAt[pos{c.Partition, c.Offset}]; !ok || d != i {
			t.Fatalf("record %d read at %d/%d, where delivery reported record %d (found=%v)", i, c.Partition, c.Offset, d, ok)
		}
		if want := fmt.Sprintf("value-%05d-%s", i, strings.Repeat("q", i%50)); *c.Value != want {
			t.Fatalf("record %d value %q, want %q", i, *c.Value, want)
		}
		wantHeaders := [][]string{{"idx", strconv.Itoa(i)}, {"kind", "e2e"}, {"empty", ""}}
		if !reflect.DeepEqual(c.Headers, wantHeaders) {
			t.Fatalf("record %d headers %q, want %q", i, c.Headers, wantHeaders)
		}
		// Per partition, records come back in the order they were sent,
		// at increasing offsets.
		if prev, seen := lastIdx[c.Partition]; seen && (i <= prev || c.Offset <= lastOff[c.Partition]) {
			t.Fatalf("partition %d: record %d at offset %d after record %d at offset %d",
				c.Partition, i, c.Offset, prev, lastOff[c.Partition])
		}
		lastIdx[c.Partition], lastOff[c.Partition] = i, c.Offset
		perPartition[c.Partition]++
	}
	for p := int32(0); p < partitions; p++ {
		if perPartition[p] != count/partitions {
			t.Errorf("partition %d: %d records, want %d", p, perPartition[p], count/partitions)
		}
	}
}

// kafkaPythonSummary is what testdata/kafka_python_versions.py prints.
type kafkaPythonSummary struct {
	Sent       []int64  `json:"sent"`
	SendErrors []string `json:"send_errors"`
	Consumed   [][]any  `json:"consumed"`
	Committed  *int64   `json:"committed"`
}

// TestKafkaPythonPinnedVersions: kafka-python (Debian's 2.0.2) pinned to
// Kafka 2.0 produces, consumes in a group and commits; pinned to 0.10,
// whose Produce carries message format v1, every send fails with
// UnsupportedVersionError, reported at once rather than after a timeout
// on a dropped connection.
func TestKafkaPythonPinnedVersions(t *testing.T) {
	python := requireKafkaPython(t)
	b := newBroker(t)
	const count = 20
	run := func(topic, version string) kafkaPythonSummary {
		t.Helper()
		createTopic(t, b.addr(), topic, 1, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, "testdata/kafka_python_versions.py",
			b.addr(), topic, topic+"-group", version, strconv.Itoa(count))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kafka_python_versions.py %s: %v\nstderr:\n%s", version, err, stderr.String())
		}
		var sum kafkaPythonSummary
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
			t.Fatalf("summary: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		return sum
	}

	sum := run("kp-2-0", "2.0.0")
	if len(sum.SendErrors) > 0 || len(sum.Sent) != count {
		t.Fatalf("api_version 2.0.0: %d sent, errors %v", len(sum.Sent), sum.SendErrors)
	}
	for i, off := range sum.Sent {
		if off != int64(i) {
			t.Fatalf("send %d at offset %d", i, off)
		}
	}
	if len(sum.Consumed) != count {
		t.Fatalf("api_version 2.0.0: consumed %d of %d", len(sum.Consumed), count)
	}
	for i, r := range sum.Consumed {
		if fmt.Sprint(r...) != fmt.Sprint(float64(i), fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)) {
			t.Fatalf("record %d: %v", i, r)
		}
	}
	if sum.Committed == nil || *sum.Committed != count {
		t.Fatalf("api_version 2.0.0: committed %v, want %d", sum.Committed, count)
	}

	start := time.Now()
	old := run("kp-0-10", "0.10.0")
	if len(old.Sent) != 0 || len(old.SendErrors) != count {
		t.Fatalf("api_version 0.10.0: %d sent, %d errors, want every send refused", len(old.Sent), len(old.SendErrors))
	}
	for _, e := range old.SendErrors {
		if e != "UnsupportedVersionError" {
			t.Fatalf("api_version 0.10.0: send failed with %s, want UnsupportedVersionError", e)
		}
	}
	t.Logf("kafka-python 0.10.0: %d sends refused with UnsupportedVersionError in %s", count, time.Since(start).Round(time.Millisecond))
}

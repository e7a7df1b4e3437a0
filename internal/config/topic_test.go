package config

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTopic(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    error
		mention string
	}{
		{"empty", nil, nil, ""},
		{"all good", map[string]string{
			"cleanup.policy": "compact,delete", "retention.ms": "-1", "segment.bytes": "14",
			"message.timestamp.type": "LogAppendTime", "compression.type": "lz4",
			"unclean.leader.election.enable": "true", "min.cleanable.dirty.ratio": "0.9",
		}, nil, ""},
		{"unknown", map[string]string{"retention.days": "1"}, ErrUnknownConfig, "retention.days"},
		{"broker name is not a topic name", map[string]string{"log.retention.ms": "1"}, ErrUnknownConfig, "log.retention.ms"},
		{"segment.bytes below 14", map[string]string{"segment.bytes": "13"}, ErrInvalidConfig, "segment.bytes"},
		{"segment.bytes not int32", map[string]string{"segment.bytes": "4294967296"}, ErrInvalidConfig, "segment.bytes"},
		{"retention.ms below -1", map[string]string{"retention.ms": "-2"}, ErrInvalidConfig, "retention.ms"},
		{"retention.ms not a number", map[string]string{"retention.ms": "1d"}, ErrInvalidConfig, "retention.ms"},
		{"cleanup.policy unknown item", map[string]string{"cleanup.policy": "delete,archive"}, ErrInvalidConfig, "cleanup.policy"},
		{"cleanup.policy empty", map[string]string{"cleanup.policy": ""}, ErrInvalidConfig, "cleanup.policy"},
		{"timestamp type", map[string]string{"message.timestamp.type": "createtime"}, ErrInvalidConfig, "message.timestamp.type"},
		{"compression", map[string]string{"compression.type": "brotli"}, ErrInvalidConfig, "compression.type"},
		{"boolean", map[string]string{"unclean.leader.election.enable": "1"}, ErrInvalidConfig, "unclean.leader.election.enable"},
		{"ratio above 1", map[string]string{"min.cleanable.dirty.ratio": "1.5"}, ErrInvalidConfig, "min.cleanable.dirty.ratio"},
		{"ratio NaN", map[string]string{"min.cleanable.dirty.ratio": "NaN"}, ErrInvalidConfig, "min.cleanable.dirty.ratio"},
		{"min isr 0", map[string]string{"min.insync.replicas": "0"}, ErrInvalidConfig, "min.insync.replicas"},
		{"flush.messages 0", map[string]string{"flush.messages": "0"}, ErrInvalidConfig, "flush.messages"},
		{"segment.ms 0", map[string]string{"segment.ms": "0"}, ErrInvalidConfig, "segment.ms"},
		{"gzip level", map[string]string{"compression.gzip.level": "10"}, ErrInvalidConfig, "compression.gzip.level"},
		{"first error in name order", map[string]string{"zzz": "1", "aaa": "1"}, ErrUnknownConfig, "aaa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTopic(tc.configs)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err %v, want %v mentioning %s", err, tc.want, tc.mention)
			}
		})
	}
}

func TestResolveTopic(t *testing.T) {
	b, err := Load("", []string{"log.retention.hours=1", "log.segment.bytes=1048576", "min.insync.replicas=2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("broker defaults", func(t *testing.T) {
		tc, err := b.ResolveTopic(nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.RetentionMs != 3600000 || tc.SegmentBytes != 1048576 || tc.MinInsyncReplicas != 2 ||
			tc.CleanupPolicy != "delete" || tc.FlushMessages != 1 || tc.FlushMs != 9223372036854775807 ||
			tc.MaxMessageBytes != 1048588 || tc.CompressionType != "producer" || tc.MinCleanableDirtyRatio != 0.5 ||
			tc.SegmentIndexBytes != 10485760 || tc.IndexIntervalBytes != 4096 || tc.RetentionBytes != -1 ||
			tc.MessageTimestampType != "CreateTime" || tc.UncleanLeaderElectionEnable || !tc.Delete() || tc.Compact() {
			t.Fatalf("%+v", tc)
		}
	})
	t.Run("overrides win", func(t *testing.T) {
		tc, err := b.ResolveTopic(map[string]string{
			"retention.ms": "-1", "cleanup.policy": "delete, compact,compact", "segment.bytes": "2048",
			"min.insync.replicas": "1", "max.message.bytes": "100", "message.timestamp.type": "LogAppendTime",
			"unclean.leader.election.enable": "TRUE", "min.cleanable.dirty.ratio": "0.1",
		})
		if err != nil {
			t.Fatal(err)
		}
		if tc.RetentionMs != -1 || tc.CleanupPolicy != "compact,delete" || tc.SegmentBytes != 2048 ||
			tc.MinInsyncReplicas != 1 || tc.MaxMessageBytes != 100 || tc.MessageTimestampType != "LogAppendTime" ||
			!tc.UncleanLeaderElectionEnable || tc.MinCleanableDirtyRatio != 0.1 || !tc.Compact() || !tc.Delete() {
			t.Fatalf("%+v", tc)
		}
	})
	t.Run("invalid override", func(t *testing.T) {
		if _, err := b.ResolveTopic(map[string]string{"segment.bytes": "1"}); !errors.Is(err, ErrInvalidConfig) {
			t.Fatalf("err %v", err)
		}
		if _, err := b.ResolveTopic(map[string]string{"nope": "1"}); !errors.Is(err, ErrUnknownConfig) {
			t.Fatalf("err %v", err)
		}
	})
}

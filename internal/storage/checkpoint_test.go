package storage

import (
	"errors"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"samsa/internal/vfs"
)

func TestParseCheckpoint(t *testing.T) {
	tests := []struct {
		name string
		data string
		want map[TopicPartition]int64
		bad  bool
	}{
		{name: "empty list", data: "0\n0\n", want: map[TopicPartition]int64{}},
		{name: "two entries", data: "0\n2\norders 3 120\na.b-c 0 7\n", want: map[TopicPartition]int64{
			{Topic: "orders", Partition: 3}: 120,
			{Topic: "a.b-c", Partition: 0}:  7,
		}},
		{name: "no trailing newline", data: "0\n1\nt 1 5", want: map[TopicPartition]int64{{Topic: "t", Partition: 1}: 5}},
		{name: "empty file", data: "", bad: true},
		{name: "version 1", data: "1\n0\n", bad: true},
		{name: "count missing", data: "0\n", bad: true},
		{name: "count negative", data: "0\n-1\n", bad: true},
		{name: "count not a number", data: "0\nx\n", bad: true},
		{name: "count beyond data", data: "0\n3\nt 0 1\nt 1 2\n", bad: true},
		{name: "count huge", data: "0\n9223372036854775807\nt 0 1\n", bad: true},
		{name: "count overflows int", data: "0\n99999999999999999999999\n", bad: true},
		{name: "short entry", data: "0\n1\nt 0\n", bad: true},
		{name: "long entry", data: "0\n1\nt 0 1 2\n", bad: true},
		{name: "bad partition", data: "0\n1\nt x 1\n", bad: true},
		{name: "negative partition", data: "0\n1\nt -1 1\n", bad: true},
		{name: "bad offset", data: "0\n1\nt 0 1.5\n", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCheckpoint([]byte(tc.data))
			if tc.bad {
				if !errors.Is(err, errBadCheckpoint) {
					t.Fatalf("parseCheckpoint(%q) = %v, %v; want errBadCheckpoint", tc.data, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCheckpoint(%q): %v", tc.data, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseCheckpoint(%q) = %v, want %v", tc.data, got, tc.want)
			}
		})
	}
}

// A count far beyond the file's size is refused before anything is
// allocated for it.
func TestParseCheckpointBoundsCountByDataLength(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func([]byte) error
	}{
		{"offsets", func(b []byte) error { _, err := parseCheckpoint(b); return err }},
		{"epochs", func(b []byte) error { _, err := parseEpochs(b); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte("0\n1048576\nt 0 1\n")
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tc.parse(data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, errBadCheckpoint) {
				t.Fatalf("parse: %v, want errBadCheckpoint", err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
				t.Fatalf("parse allocated %d bytes for a %d byte file", n, len(data))
			}
		})
	}
}

func TestParseEpochs(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []EpochEntry
		bad  bool
	}{
		{name: "empty list", data: "0\n0\n", want: []EpochEntry{}},
		{name: "two entries", data: "0\n2\n3 0\n5 100\n", want: []EpochEntry{{3, 0}, {5, 100}}},
		{name: "same start", data: "0\n2\n3 10\n5 10\n", want: []EpochEntry{{3, 10}, {5, 10}}},
		{name: "version 1", data: "1\n0\n", bad: true},
		{name: "count beyond data", data: "0\n4\n3 0\n5 1\n", bad: true},
		{name: "count huge", data: "0\n9223372036854775807\n", bad: true},
		{name: "three fields", data: "0\n1\n3 0 1\n", bad: true},
		{name: "negative epoch", data: "0\n1\n-1 0\n", bad: true},
		{name: "epoch not increasing", data: "0\n2\n3 0\n3 5\n", bad: true},
		{name: "start decreasing", data: "0\n2\n3 5\n4 4\n", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEpochs([]byte(tc.data))
			if tc.bad {
				if !errors.Is(err, errBadCheckpoint) {
					t.Fatalf("parseEpochs(%q) = %v, %v; want errBadCheckpoint", tc.data, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseEpochs(%q): %v", tc.data, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseEpochs(%q) = %v, want %v", tc.data, got, tc.want)
			}
		})
	}
}

// A recovery point checkpoint with a corrupt count is ignored: the
// partition is recovered as if the checkpoint were missing, and every
// batch reads back.
func TestCorruptCheckpointCountRecoversAsMissing(t *testing.T) {
	forEachFS(t, func(t *testing.T, fs vfs.FS, dir string) {
		m := openManager(t, fs, dir, nil)
		l, _ := m.Create(testTP, [16]byte{1}, smallConfig())
		want := appendN(t, l, 0, 40, 1000)
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{recoveryPointFile, logStartOffsetFile} {
			writeFileBytes(t, fs, filepath.Join(dir, name), []byte("0\n4611686018427387904\norders 3 5\n"))
		}
		m = openManager(t, fs, dir, nil)
		defer m.Close()
		l = m.Log(testTP)
		if l == nil {
			t.Fatal("log lost")
		}
		l.SetConfig(smallConfig())
		if l.LogStartOffset() != 0 {
			t.Fatalf("LogStartOffset = %d, want 0", l.LogStartOffset())
		}
		checkLog(t, l, want)
	})
}

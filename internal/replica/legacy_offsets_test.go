package replica

import (
	"slices"
	"testing"

	"samsa/internal/storage"
)

// TestLegacyOffsets: ListOffsets v0's list, as Kafka 3.x built it.
func TestLegacyOffsets(t *testing.T) {
	t.Parallel()
	segs := []storage.SegmentInfo{
		{BaseOffset: 0, MaxTimestamp: 100, Size: 10},
		{BaseOffset: 40, MaxTimestamp: 200, Size: 10},
		{BaseOffset: 90, MaxTimestamp: 300, Size: 10},
	}
	empty := []storage.SegmentInfo{{BaseOffset: 7, MaxTimestamp: -1, Size: 0}}
	tests := []struct {
		name              string
		segs              []storage.SegmentInfo
		logStart, leo, hw int64
		ts                int64
		maxNum            int32
		want              []int64
	}{
		{"latest, one", segs, 0, 120, 120, -1, 1, []int64{120}},
		{"latest, all", segs, 0, 120, 120, -1, 10, []int64{120, 90, 40, 0}},
		{"latest above the high watermark", segs, 0, 120, 100, -1, 2, []int64{100, 90}},
		{"high watermark below two candidates", segs, 0, 120, 50, -1, 3, []int64{50, 40}},
		{"earliest", segs, 0, 120, 120, -2, 5, []int64{0}},
		{"earliest after DeleteRecords", segs, 55, 120, 120, -2, 5, []int64{55}},
		{"log start above a segment base", segs, 55, 120, 120, -1, 5, []int64{120, 90, 55, 55}},
		{"by time: the newest segment dated at or before", segs, 0, 120, 120, 250, 5, []int64{40, 0}},
		{"by time: exactly a segment's time", segs, 0, 120, 120, 300, 1, []int64{90}},
		{"by time: before every segment", segs, 0, 120, 120, 50, 5, []int64{}},
		{"by time: after now is the log end", segs, 0, 120, 120, 2000, 1, []int64{120}},
		{"no offsets asked", segs, 0, 120, 120, -1, 0, []int64{}},
		{"empty log", empty, 7, 7, 7, -1, 3, []int64{7}},
		{"empty log, earliest", empty, 7, 7, 7, -2, 3, []int64{7}},
	}
	for _, tt := range tests {
		got := legacyOffsets(tt.segs, tt.logStart, tt.leo, tt.hw, tt.ts, tt.maxNum, 1000)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

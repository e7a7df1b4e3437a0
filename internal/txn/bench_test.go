package txn

import (
	"fmt"
	"testing"
)

// BenchmarkCheckUpdate measures the append path's cost per batch with many
// producers in the partition.
func BenchmarkCheckUpdate(b *testing.B) {
	for _, producers := range []int{1, 1000} {
		b.Run(fmt.Sprintf("producers=%d", producers), func(b *testing.B) {
			s := NewState()
			seqs := make([]int32, producers)
			off := int64(0)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				pid := i % producers
				bt := Batch{ProducerID: int64(pid), Epoch: 0, BaseSequence: seqs[pid], LastOffsetDelta: 9}
				if dup, err := s.Check(bt); dup != nil || err != nil {
					b.Fatalf("Check(%v) = %v, %v", bt, dup, err)
				}
				s.Update(bt, off, off+9, 0, 0)
				seqs[pid] = nextSeq(bt.LastSeq())
				off += 10
			}
		})
	}
}

func BenchmarkMarshalSnapshot(b *testing.B) {
	s := NewState()
	for pid := range int64(1000) {
		for i := range int32(WindowSize) {
			s.Update(Batch{ProducerID: pid, BaseSequence: i}, int64(i), int64(i), 0, 0)
		}
	}
	b.SetBytes(int64(len(s.MarshalSnapshot())))
	b.ReportAllocs()
	for b.Loop() {
		_ = s.MarshalSnapshot()
	}
}

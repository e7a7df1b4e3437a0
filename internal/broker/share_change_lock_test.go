package broker

import (
	"sync"
	"testing"
	"time"
)

// TestShareGroupChangeLocksSerialiseAndAreDropped: the change lock of a
// group admits one holder at a time, and is dropped from the map once no
// caller holds or waits for it, so the map does not grow with every group
// ever changed.
func TestShareGroupChangeLocksSerialiseAndAreDropped(t *testing.T) {
	t.Parallel()
	sg := &shareGroups{locks: map[string]*changeLock{}}
	unlock := sg.lock("g")
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		u := sg.lock("g")
		close(got)
		u()
		close(done)
	}()
	select {
	case <-got:
		t.Fatal("a second caller took the change lock while it was held")
	case <-time.After(20 * time.Millisecond):
	}
	if n := sg.changeLocks(); n != 1 {
		t.Fatalf("%d locks while one group is being changed", n)
	}
	unlock()
	<-got
	<-done
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			sg.lock(id)()
		}(string(rune('a' + i%5)))
	}
	wg.Wait()
	if n := sg.changeLocks(); n != 0 {
		t.Fatalf("%d change locks left after every change ended", n)
	}
}

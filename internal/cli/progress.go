package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
)

// progressInterval is how often the progress line is printed.
const progressInterval = time.Second

// progressFlag is --progress: on by default when stderr is a terminal
// (and, for consume, stdout is not, so the line does not mix with the
// records); --progress forces it, --progress=false turns it off.
type progressFlag struct{ on bool }

func (f *progressFlag) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.on, "progress", false, "print records/s and MB/s every second on stderr (default: when stderr is a terminal)")
}

// enabled reports whether the progress line is on for cmd. stdout, when
// not nil, must not be a terminal for the default to be on.
func (f *progressFlag) enabled(cmd *cobra.Command, stderr, stdout io.Writer) bool {
	if cmd.Flags().Changed("progress") {
		return f.on
	}
	return isTerminal(stderr) && (stdout == nil || !isTerminal(stdout))
}

// isTerminal reports whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress prints, every progressInterval, the records/s and MB/s (10^6
// bytes) of the interval just ended, the total so far, and, for a
// producer, the p50 and p99 acknowledgement latency of the interval:
//
//	produce orders: 41250 records/s, 42.24 MB/s, latency p50 3.10 ms p99 9.85 ms, 82500 records total
//	consume orders: 98000 records/s, 100.35 MB/s, 196000 records total
//
// A nil *progress does nothing, so callers need not check whether it is
// on. mu guards the counters, which the client's goroutines update.
type progress struct {
	w       io.Writer
	label   string
	latency bool

	mu      sync.Mutex
	records int64
	bytes   int64
	total   int64
	lat     []int64 // ns, this interval

	stop chan struct{}
	done chan struct{}
}

// startProgress starts the line's goroutine when on, and returns nil
// otherwise. close stops it.
func startProgress(on bool, w io.Writer, label string, latency bool) *progress {
	if !on {
		return nil
	}
	p := &progress{w: w, label: label, latency: latency, stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop() // owned by p: stopped and waited for by close
	return p
}

// add counts n records of size bytes in all.
func (p *progress) add(n, bytes int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.records += n
	p.bytes += bytes
	p.total += n
	p.mu.Unlock()
}

// ack counts one acknowledged record of size bytes, d after it was sent.
func (p *progress) ack(bytes int64, d time.Duration) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.records++
	p.bytes += bytes
	p.total++
	p.lat = append(p.lat, int64(d))
	p.mu.Unlock()
}

// close stops the line; nothing is printed after it returns.
func (p *progress) close() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.print(now.Sub(last))
			last = now
		}
	}
}

// print writes the line of an interval of length el and starts the next.
func (p *progress) print(el time.Duration) {
	p.mu.Lock()
	records, bytes, total, lat := p.records, p.bytes, p.total, p.lat
	p.records, p.bytes, p.lat = 0, 0, nil
	p.mu.Unlock()
	sec := el.Seconds()
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %.0f records/s, %.2f MB/s", p.label, float64(records)/sec, float64(bytes)/1e6/sec)
	if p.latency {
		if len(lat) == 0 {
			b.WriteString(", latency p50 - p99 -")
		} else {
			l := summarize(lat)
			fmt.Fprintf(&b, ", latency p50 %.2f ms p99 %.2f ms", l.P50, l.P99)
		}
	}
	fmt.Fprintf(&b, ", %d records total\n", total)
	io.WriteString(p.w, b.String())
}

package txn

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// coordEnv drives the metadata of several transactional ids from a
// datadriven script, with a fake clock and producer ids from 1000 up.
type coordEnv struct {
	cfg     CoordinatorConfig
	txns    map[string]TxnMetadata
	now     int64
	nextPID int64
}

func newCoordEnv() *coordEnv {
	return &coordEnv{
		cfg:     CoordinatorConfig{MaxTimeoutMs: 900000, ExpirationMs: 604800000},
		txns:    map[string]TxnMetadata{},
		nextPID: 1000,
	}
}

func (e *coordEnv) newPID() int64 {
	e.nextPID++
	return e.nextPID - 1
}

func coordErr(err error) string {
	if err == nil {
		return "ok"
	}
	return "err=" + strings.TrimPrefix(err.Error(), "txn: ")
}

func (m TxnMetadata) line() string {
	var ps []string
	for _, p := range m.Partitions {
		ps = append(ps, p.String())
	}
	s := fmt.Sprintf("> %s %s pid=%d epoch=%d last=%d/%d timeout=%d start=%d update=%d partitions=[%s]",
		m.TransactionalID, m.State, m.ProducerID, m.ProducerEpoch, m.LastProducerID, m.LastProducerEpoch,
		m.TimeoutMs, m.TxnStartMs, m.LastUpdateMs, strings.Join(ps, " "))
	if m.NextProducerID != NoProducerID {
		s += fmt.Sprintf(" next=%d", m.NextProducerID)
	}
	return s + "\n"
}

func parsePartitions(t *testing.T, s string) []TopicPartition {
	t.Helper()
	var out []TopicPartition
	for _, f := range strings.Split(s, ",") {
		i := strings.LastIndexByte(f, '-')
		if i < 0 {
			t.Fatalf("bad partition %q", f)
		}
		n, err := strconv.Atoi(f[i+1:])
		if err != nil {
			t.Fatalf("bad partition %q: %v", f, err)
		}
		out = append(out, TopicPartition{Topic: f[:i], Partition: int32(n)})
	}
	return out
}

// scanPIDEpoch reads pid= and epoch=, defaulting to the id's current ones.
func scanPIDEpoch(t *testing.T, d *datadriven.TestData, m TxnMetadata) (int64, int16) {
	pid, epoch := m.ProducerID, int(m.ProducerEpoch)
	d.MaybeScanArgs(t, "pid", &pid)
	d.MaybeScanArgs(t, "epoch", &epoch)
	return pid, int16(epoch)
}

func (e *coordEnv) handle(t *testing.T, d *datadriven.TestData) string {
	var ms int64
	if d.MaybeScanArgs(t, "after", &ms) {
		e.now += ms
	}
	var id string
	if d.HasArg("id") {
		d.ScanArgs(t, "id", &id)
	}
	cur, ok := e.txns[id]
	var (
		next TxnMetadata
		err  error
	)
	switch d.Cmd {
	case "init":
		req := InitRequest{TimeoutMs: 60000, ExpectedProducerID: NoProducerID, ExpectedEpoch: NoProducerEpoch}
		d.MaybeScanArgs(t, "timeout", &req.TimeoutMs)
		var epoch int
		if d.MaybeScanArgs(t, "pid", &req.ExpectedProducerID) {
			d.ScanArgs(t, "epoch", &epoch)
			req.ExpectedEpoch = int16(epoch)
		}
		var p *TxnMetadata
		if ok {
			p = &cur
		}
		next, err = InitProducerID(p, id, req, e.cfg, e.newPID, e.now)
		if err != nil && (!ok || next.State == cur.State) {
			return coordErr(err) + "\n"
		}
	case "add":
		var parts string
		d.ScanArgs(t, "partitions", &parts)
		pid, epoch := scanPIDEpoch(t, d, cur)
		next, err = cur.AddPartitions(pid, epoch, parsePartitions(t, parts), e.now)
	case "end":
		pid, epoch := scanPIDEpoch(t, d, cur)
		req := EndRequest{ProducerID: pid, Epoch: epoch, Commit: d.HasArg("commit"), V2: d.HasArg("v2")}
		if req.Commit == d.HasArg("abort") {
			t.Fatalf("end needs commit or abort")
		}
		next, err = cur.EndTxn(req, e.newPID, e.now)
	case "complete":
		next, err = cur.CompleteEnd(e.now)
	case "set-epoch":
		var epoch int
		d.ScanArgs(t, "epoch", &epoch)
		cur.ProducerEpoch = int16(epoch)
		e.txns[id] = cur
		return cur.line()
	case "tick":
		var sb strings.Builder
		ids := make([]string, 0, len(e.txns))
		for k := range e.txns {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		for _, k := range ids {
			m := e.txns[k]
			if n, aborted, err := m.AbortTimedOut(e.now); err != nil {
				fmt.Fprintf(&sb, "timeout %s -> %s\n", k, coordErr(err))
			} else if aborted {
				fmt.Fprintf(&sb, "timeout %s: %s -> %s\n", k, m.State, n.State)
				e.txns[k] = n
				sb.WriteString(n.line())
			}
			if n, dead := e.txns[k].Expire(e.cfg, e.now); dead {
				fmt.Fprintf(&sb, "expire %s: %s -> %s\n", k, e.txns[k].State, n.State)
				sb.WriteString(n.line())
				delete(e.txns, k)
			}
		}
		fmt.Fprintf(&sb, "now=%d\n", e.now)
		return sb.String()
	case "show":
		if !ok {
			return "> " + id + " unknown\n"
		}
		return cur.line()
	default:
		t.Fatalf("unknown command %q", d.Cmd)
	}
	var sb strings.Builder
	sb.WriteString(coordErr(err))
	if ok && next.State != cur.State {
		fmt.Fprintf(&sb, " %s -> %s", cur.State, next.State)
	}
	sb.WriteString("\n")
	e.txns[id] = next
	sb.WriteString(next.line())
	return sb.String()
}

// TestCoordinatorScripts runs the coordinator scripts in testdata. Each
// starts with no transactional ids at time 0. Rewrite with -rewrite.
func TestCoordinatorScripts(t *testing.T) {
	paths, err := filepath.Glob("testdata/coordinator*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no coordinator scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			datadriven.RunTest(t, path, newCoordEnv().handle)
		})
	}
}

func ongoing(pid int64, epoch int16) TxnMetadata {
	return TxnMetadata{
		TransactionalID: "t", ProducerID: pid, LastProducerID: NoProducerID,
		ProducerEpoch: epoch, LastProducerEpoch: NoProducerEpoch, NextProducerID: NoProducerID,
		TimeoutMs: 1000, State: TxnOngoing, TxnStartMs: 0,
		Partitions: []TopicPartition{{"a", 0}},
	}
}

func inState(m TxnMetadata, s TxnState) TxnMetadata {
	m.State = s
	return m
}

func noPID() int64 { panic("unexpected producer id allocation") }

// TestCoordinatorErrors checks the error each request gets where Kafka
// defines one.
func TestCoordinatorErrors(t *testing.T) {
	cfg := CoordinatorConfig{MaxTimeoutMs: 900000, ExpirationMs: 1000}
	base := ongoing(7, 3)
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		// Reference: KIP-588: a stale epoch is PRODUCER_FENCED.
		{"end with wrong epoch", func() error {
			_, err := base.EndTxn(EndRequest{ProducerID: 7, Epoch: 4, Commit: true}, noPID, 1)
			return err
		}, ErrProducerFenced},
		{"end with old epoch", func() error {
			_, err := base.EndTxn(EndRequest{ProducerID: 7, Epoch: 2, Commit: true}, noPID, 1)
			return err
		}, ErrProducerFenced},
		{"end v2 with old epoch", func() error {
			_, err := base.EndTxn(EndRequest{ProducerID: 7, Epoch: 2, Commit: true, V2: true}, noPID, 1)
			return err
		}, ErrProducerFenced},
		// A recovering InitProducerId bumps the epoch and remembers the
		// old one; a late v2 EndTxn at the old epoch must not abort the
		// empty state and bump again, which would fence the producer.
		{"end v2 at the last epoch after a recovering init", func() error {
			m := inState(base, TxnCompleteCommit)
			m, err := InitProducerID(&m, "t", InitRequest{TimeoutMs: 1000, ExpectedProducerID: 7, ExpectedEpoch: 3}, cfg, noPID, 1)
			if err != nil || m.State != TxnEmpty || m.ProducerEpoch != 4 || m.LastProducerEpoch != 3 {
				return fmt.Errorf("init: %+v, %v", m, err)
			}
			_, err = m.EndTxn(EndRequest{ProducerID: 7, Epoch: 3, V2: true}, noPID, 2)
			return err
		}, ErrProducerFenced},
		{"add with old epoch", func() error {
			_, err := base.AddPartitions(7, 2, []TopicPartition{{"b", 0}}, 1)
			return err
		}, ErrProducerFenced},
		{"end with other producer id", func() error {
			_, err := base.EndTxn(EndRequest{ProducerID: 8, Epoch: 3, Commit: true}, noPID, 1)
			return err
		}, ErrInvalidProducerIDMapping},
		{"add with other producer id", func() error {
			_, err := base.AddPartitions(8, 3, nil, 1)
			return err
		}, ErrInvalidProducerIDMapping},
		// Reference: Kafka TransactionCoordinator: EndTxn before any
		// AddPartitions is INVALID_TXN_STATE.
		{"commit before add", func() error {
			_, err := inState(base, TxnEmpty).EndTxn(EndRequest{ProducerID: 7, Epoch: 3, Commit: true}, noPID, 1)
			return err
		}, ErrInvalidTxnState},
		{"abort before add v1", func() error {
			_, err := inState(base, TxnEmpty).EndTxn(EndRequest{ProducerID: 7, Epoch: 3}, noPID, 1)
			return err
		}, ErrInvalidTxnState},
		{"commit while PrepareCommit", func() error {
			_, err := inState(base, TxnPrepareCommit).EndTxn(EndRequest{ProducerID: 7, Epoch: 3, Commit: true}, noPID, 1)
			return err
		}, ErrConcurrentTransactions},
		{"abort while PrepareCommit", func() error {
			_, err := inState(base, TxnPrepareCommit).EndTxn(EndRequest{ProducerID: 7, Epoch: 3}, noPID, 1)
			return err
		}, ErrInvalidTxnState},
		{"abort while PrepareAbort", func() error {
			_, err := inState(base, TxnPrepareAbort).EndTxn(EndRequest{ProducerID: 7, Epoch: 3}, noPID, 1)
			return err
		}, ErrConcurrentTransactions},
		{"commit after CompleteAbort", func() error {
			_, err := inState(base, TxnCompleteAbort).EndTxn(EndRequest{ProducerID: 7, Epoch: 3, Commit: true}, noPID, 1)
			return err
		}, ErrInvalidTxnState},
		{"add while PrepareCommit", func() error {
			_, err := inState(base, TxnPrepareCommit).AddPartitions(7, 3, nil, 1)
			return err
		}, ErrConcurrentTransactions},
		{"init while PrepareCommit", func() error {
			m := inState(base, TxnPrepareCommit)
			_, err := InitProducerID(&m, "t", InitRequest{TimeoutMs: 1000, ExpectedProducerID: NoProducerID, ExpectedEpoch: NoProducerEpoch}, cfg, noPID, 1)
			return err
		}, ErrConcurrentTransactions},
		// Reference: Kafka TransactionCoordinator.handleInitProducerId:
		// the timeout must be in (0, transaction.max.timeout.ms].
		{"timeout above max", func() error {
			_, err := InitProducerID(nil, "t", InitRequest{TimeoutMs: 900001, ExpectedProducerID: NoProducerID, ExpectedEpoch: NoProducerEpoch}, cfg, noPID, 1)
			return err
		}, ErrInvalidTransactionTimeout},
		{"timeout zero", func() error {
			_, err := InitProducerID(nil, "t", InitRequest{TimeoutMs: 0, ExpectedProducerID: NoProducerID, ExpectedEpoch: NoProducerEpoch}, cfg, noPID, 1)
			return err
		}, ErrInvalidTransactionTimeout},
		// Reference: KIP-360: recovering with an epoch that is neither the
		// current nor the last one is fenced.
		{"recover with fenced epoch", func() error {
			m := inState(base, TxnCompleteCommit)
			_, err := InitProducerID(&m, "t", InitRequest{TimeoutMs: 1000, ExpectedProducerID: 7, ExpectedEpoch: 1}, cfg, noPID, 1)
			return err
		}, ErrProducerFenced},
		{"recover with other producer id", func() error {
			m := inState(base, TxnCompleteCommit)
			_, err := InitProducerID(&m, "t", InitRequest{TimeoutMs: 1000, ExpectedProducerID: 9, ExpectedEpoch: 3}, cfg, noPID, 1)
			return err
		}, ErrProducerFenced},
		{"complete while Ongoing", func() error {
			_, err := base.CompleteEnd(1)
			return err
		}, ErrInvalidTxnState},
		{"fence at max epoch", func() error {
			_, _, err := ongoing(7, math.MaxInt16).AbortTimedOut(5000)
			return err
		}, ErrInvalidProducerEpoch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

// TestTransitionsFollowKafkaTable checks every allowed move against the
// previous-state table and that the receiver is never modified.
func TestTransitionsFollowKafkaTable(t *testing.T) {
	for _, to := range []TxnState{TxnPrepareCommit, TxnCompleteCommit, TxnCompleteAbort, TxnPrepareEpochFence} {
		if CanTransition(TxnEmpty, to) {
			t.Errorf("Empty -> %s allowed", to)
		}
	}
	m := ongoing(7, 3)
	n, err := m.AddPartitions(7, 3, []TopicPartition{{"b", 1}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	n.Partitions[0].Topic = "changed"
	if m.Partitions[0].Topic != "a" || len(m.Partitions) != 1 {
		t.Fatalf("receiver modified: %v", m.Partitions)
	}
	if s := TxnState(42).String(); s != "TxnState(42)" {
		t.Fatalf("String: %q", s)
	}
}

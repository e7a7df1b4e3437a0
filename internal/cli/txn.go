package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// Transaction administration, as Kafka's kafka-transactions.sh does it
// (KIP-664): list and describe transactional ids at their coordinators,
// show the producers and open transactions of partitions, find hanging
// transactions and abort one.

func newTxnCmd(g *globals, e env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "List, describe, find hanging and abort transactions",
		Long: `Transaction administration through the Kafka admin API
(ListTransactions, DescribeTransactions, DescribeProducers,
WriteTxnMarkers), as kafka-transactions.sh does it (KIP-664).

A hanging transaction is one a partition holds open (it keeps the last
stable offset, and so every read_committed consumer, from moving past its
first record) while its coordinator no longer has it in a transaction:
find-hanging lists them and abort writes the ABORT marker that closes one.`,
		Example: `  samsa txn list
  samsa txn describe payments-writer
  samsa txn producers --topic orders
  samsa txn find-hanging --topic orders
  samsa txn abort --topic orders --partition 3 --start-offset 1200`,
		Args: noArgs,
		RunE: helpRun,
	}
	cmd.AddCommand(
		newTxnListCmd(g, e),
		newTxnDescribeCmd(g, e),
		newTxnProducersCmd(g, e),
		newTxnFindHangingCmd(g, e),
		newTxnAbortCmd(g, e),
	)
	return cmd
}

func newTxnListCmd(g *globals, e env) *cobra.Command {
	var (
		states      []string
		producerIDs []int64
		minDuration time.Duration
		format      outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List transactional ids with their coordinator, producer id and state",
		Long: `List the transactional ids every coordinator knows, sorted by id, with
the coordinator's broker id, the producer id and the transaction state
(Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit,
CompleteAbort, PrepareEpochFence, Dead). --state and --producer-id filter
at the coordinators; --min-duration keeps transactions running at least
that long (KIP-994). --format json prints them as one document.`,
		Example: `  samsa txn list
  samsa txn list --state Ongoing --min-duration 5m --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			listed, err := listTransactions(cmd.Context(), adm, producerIDs, states, minDuration)
			if err != nil {
				return fmt.Errorf("list transactions: %w", err)
			}
			if format.json() {
				type txnJSON struct {
					TransactionalID string `json:"transactional_id"`
					Coordinator     int32  `json:"coordinator"`
					ProducerID      int64  `json:"producer_id"`
					State           string `json:"state"`
				}
				out := []txnJSON{}
				for _, l := range listed.Sorted() {
					out = append(out, txnJSON{l.TxnID, l.Coordinator, l.ProducerID, l.State})
				}
				return writeJSON(e.stdout, struct {
					Transactions []txnJSON `json:"transactions"`
				}{out})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tPRODUCER-ID\tSTATE")
			for _, l := range listed.Sorted() {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", l.TxnID, l.Coordinator, l.ProducerID, l.State)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only transactions in these states (comma-separated)")
	cmd.Flags().Int64SliceVar(&producerIDs, "producer-id", nil, "only these producer ids (comma-separated)")
	cmd.Flags().DurationVar(&minDuration, "min-duration", 0, "only transactions running at least this long")
	addFormatFlag(cmd, &format)
	return cmd
}

// listTransactions is ListTransactions with the KIP-994 duration filter,
// which kadm does not expose: the request goes to every broker.
func listTransactions(ctx context.Context, adm *kadm.Client, producerIDs []int64, states []string, minDuration time.Duration) (kadm.ListedTransactions, error) {
	listed, err := adm.ListTransactions(ctx, producerIDs, states)
	if err != nil || minDuration <= 0 {
		return listed, err
	}
	described, err := adm.DescribeTransactions(ctx, listed.TransactionalIDs()...)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-minDuration).UnixMilli()
	out := make(kadm.ListedTransactions)
	for id, l := range listed {
		d, ok := described[id]
		if ok && d.Err == nil && d.StartTimestamp >= 0 && d.StartTimestamp <= cutoff {
			out[id] = l
		}
	}
	return out, nil
}

func newTxnDescribeCmd(g *globals, e env) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "describe TRANSACTIONAL-ID...",
		Short: "Describe transactional ids: state, producer, timeout and partitions",
		Long: `Describe transactional ids at their coordinators: the coordinator, the
state, the producer id and epoch, the transaction timeout, when the
current transaction started and the partitions in it. --format json prints
one document, an id that could not be described carrying its error.`,
		Example: `  samsa txn describe payments-writer
  samsa txn describe payments-writer --format json`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, ids []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			described, err := adm.DescribeTransactions(cmd.Context(), ids...)
			if err != nil {
				return fmt.Errorf("describe transactions: %w", err)
			}
			type txnDescJSON struct {
				TransactionalID string             `json:"transactional_id"`
				Coordinator     int32              `json:"coordinator"`
				State           string             `json:"state,omitempty"`
				ProducerID      int64              `json:"producer_id"`
				ProducerEpoch   int16              `json:"producer_epoch"`
				TimeoutMs       int32              `json:"timeout_ms"`
				StartTimestamp  *int64             `json:"start_timestamp"`
				Partitions      map[string][]int32 `json:"partitions"`
				Error           string             `json:"error,omitempty"`
			}
			out := []txnDescJSON{}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TRANSACTIONAL-ID\tCOORDINATOR\tSTATE\tPRODUCER-ID\tEPOCH\tTIMEOUT-MS\tSTARTED\tPARTITIONS")
			var failed []string
			for _, d := range described.Sorted() {
				if d.Err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v", d.TxnID, d.Err))
					out = append(out, txnDescJSON{TransactionalID: d.TxnID, Coordinator: d.Coordinator, Partitions: map[string][]int32{}, Error: d.Err.Error()})
					continue
				}
				dj := txnDescJSON{TransactionalID: d.TxnID, Coordinator: d.Coordinator, State: d.State,
					ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch, TimeoutMs: d.TimeoutMillis,
					Partitions: map[string][]int32{}}
				if d.StartTimestamp >= 0 {
					dj.StartTimestamp = &d.StartTimestamp
				}
				for t, ps := range d.Topics {
					for p := range ps {
						dj.Partitions[t] = append(dj.Partitions[t], p)
					}
					slices.Sort(dj.Partitions[t])
				}
				out = append(out, dj)
				started := "-"
				if d.StartTimestamp >= 0 {
					started = time.UnixMilli(d.StartTimestamp).UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", d.TxnID, d.Coordinator, d.State,
					d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, started, formatTopicsSet(d.Topics))
			}
			if format.json() {
				if err := writeJSON(e.stdout, struct {
					Transactions []txnDescJSON `json:"transactions"`
				}{out}); err != nil {
					return err
				}
			} else if err := tw.Flush(); err != nil {
				return err
			}
			if len(failed) > 0 {
				return fmt.Errorf("describe transactions: %s", strings.Join(failed, "; "))
			}
			return nil
		},
	}
	addFormatFlag(cmd, &format)
	return cmd
}

// formatTopicsSet renders a topic set as "topic[0,1] other[3]".
func formatTopicsSet(s kadm.TopicsSet) string {
	m := make(map[string][]int32, len(s))
	for t, ps := range s {
		for p := range ps {
			m[t] = append(m[t], p)
		}
	}
	return formatAssignment(m)
}

// partitionFlags are --topic and --partition, naming partitions to look at.
type partitionFlags struct {
	topic     string
	partition int32
}

func (f *partitionFlags) add(cmd *cobra.Command, required bool) {
	cmd.Flags().StringVar(&f.topic, "topic", "", "the topic")
	cmd.Flags().Int32Var(&f.partition, "partition", -1, "one partition of the topic (default: all)")
	if required {
		_ = cmd.MarkFlagRequired("topic")
	}
}

// set returns the partitions the flags name, nil for every topic.
func (f *partitionFlags) set() kadm.TopicsSet {
	if f.topic == "" {
		return nil
	}
	s := make(kadm.TopicsSet)
	if f.partition >= 0 {
		s.Add(f.topic, f.partition)
	} else {
		s.Add(f.topic)
	}
	return s
}

func newTxnProducersCmd(g *globals, e env) *cobra.Command {
	var (
		pf     partitionFlags
		format outputFormat
	)
	cmd := &cobra.Command{
		Use:   "producers",
		Short: "Show the producers of partitions and their open transactions",
		Long: `Show, for each partition, the idempotent and transactional producers its
leader knows: producer id and epoch, last sequence, last write, the
coordinator epoch of its last marker, and the first offset of its open
transaction ("-" when none is open; null in --format json).`,
		Example: `  samsa txn producers --topic orders --partition 3
  samsa txn producers --topic orders --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			prods, err := describeProducers(cmd.Context(), adm, pf.set())
			if err != nil {
				return err
			}
			if format.json() {
				type txnProducerJSON struct {
					Topic            string `json:"topic"`
					Partition        int32  `json:"partition"`
					ProducerID       int64  `json:"producer_id"`
					ProducerEpoch    int16  `json:"producer_epoch"`
					LastSequence     int32  `json:"last_sequence"`
					LastTimestamp    int64  `json:"last_timestamp"`
					CoordinatorEpoch int32  `json:"coordinator_epoch"`
					TxnStartOffset   *int64 `json:"txn_start_offset"`
				}
				out := []txnProducerJSON{}
				for _, p := range prods {
					pj := txnProducerJSON{p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch,
						p.LastSequence, p.LastTimestamp, p.CoordinatorEpoch, nil}
					if p.CurrentTxnStartOffset >= 0 {
						pj.TxnStartOffset = &p.CurrentTxnStartOffset
					}
					out = append(out, pj)
				}
				return writeJSON(e.stdout, struct {
					Producers []txnProducerJSON `json:"producers"`
				}{out})
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tPRODUCER-ID\tEPOCH\tLAST-SEQUENCE\tLAST-WRITE\tCOORDINATOR-EPOCH\tTXN-START-OFFSET")
			for _, p := range prods {
				start := "-"
				if p.CurrentTxnStartOffset >= 0 {
					start = strconv.FormatInt(p.CurrentTxnStartOffset, 10)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%d\t%s\n", p.Topic, p.Partition, p.ProducerID,
					p.ProducerEpoch, p.LastSequence, formatMillis(p.LastTimestamp), p.CoordinatorEpoch, start)
			}
			return tw.Flush()
		},
	}
	pf.add(cmd, false)
	addFormatFlag(cmd, &format)
	return cmd
}

// formatMillis renders a unix millisecond timestamp, or "-" when unknown.
func formatMillis(ms int64) string {
	if ms < 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

// describeProducers returns the producers of the partitions in s (every
// topic when s is nil), sorted, failing on the first partition error.
func describeProducers(ctx context.Context, adm *kadm.Client, s kadm.TopicsSet) ([]kadm.DescribedProducer, error) {
	described, err := adm.DescribeProducers(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("describe producers: %w", err)
	}
	var out []kadm.DescribedProducer
	var failed []string
	for _, t := range described {
		for _, p := range t.Partitions {
			if p.Err != nil {
				failed = append(failed, fmt.Sprintf("%s-%d: %v", p.Topic, p.Partition, p.Err))
				continue
			}
			out = append(out, p.ActiveProducers.Sorted()...)
		}
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		return nil, fmt.Errorf("describe producers: %s", strings.Join(failed, "; "))
	}
	slices.SortFunc(out, func(a, b kadm.DescribedProducer) int {
		if a.Less(&b) {
			return -1
		}
		if b.Less(&a) {
			return 1
		}
		return 0
	})
	return out, nil
}

// openTxn is a transaction a partition holds open.
type openTxn struct {
	kadm.DescribedProducer
	// Why says why the transaction is hanging.
	Why string
}

// findHanging returns the open transactions of prods that are hanging
// (Reference: KIP-664, kafka-transactions.sh find-hanging): open (a
// transaction start offset) for longer than maxTimeout, and either no
// coordinator lists their producer id, or the coordinator's transaction of
// that producer is not ongoing, has another epoch, or does not contain the
// partition. byProducer maps producer ids to what ListTransactions gave
// for them, described maps transactional ids to DescribeTransactions.
func findHanging(prods []kadm.DescribedProducer, byProducer map[int64]kadm.ListedTransaction, described kadm.DescribedTransactions, nowMs int64, maxTimeout time.Duration) []openTxn {
	var out []openTxn
	for _, p := range prods {
		if p.CurrentTxnStartOffset < 0 || nowMs-p.LastTimestamp < maxTimeout.Milliseconds() {
			continue
		}
		l, ok := byProducer[p.ProducerID]
		if !ok {
			out = append(out, openTxn{p, "no coordinator knows the producer id"})
			continue
		}
		d, ok := described[l.TxnID]
		switch {
		case !ok || d.Err != nil:
			// The coordinator did not answer: not provably hanging.
		case d.ProducerID != p.ProducerID:
			out = append(out, openTxn{p, fmt.Sprintf("transactional id %s moved to producer id %d", l.TxnID, d.ProducerID)})
		case d.State != "Ongoing" && d.State != "PrepareCommit" && d.State != "PrepareAbort" && d.State != "PrepareEpochFence":
			out = append(out, openTxn{p, fmt.Sprintf("transactional id %s is %s", l.TxnID, d.State)})
		case !topicsSetHas(d.Topics, p.Topic, p.Partition):
			out = append(out, openTxn{p, fmt.Sprintf("transactional id %s's transaction does not contain the partition", l.TxnID)})
		}
	}
	return out
}

func topicsSetHas(s kadm.TopicsSet, topic string, partition int32) bool {
	_, ok := s[topic][partition]
	return ok
}

func newTxnFindHangingCmd(g *globals, e env) *cobra.Command {
	var (
		pf         partitionFlags
		maxTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "find-hanging",
		Short: "Find open transactions their coordinator no longer knows",
		Long: `Find hanging transactions: a partition has a transaction open for longer
than --max-transaction-timeout (set it to the brokers'
transaction.max.timeout.ms; a live transaction cannot run longer), and
its coordinator lists no transaction for the producer id, or one that is
over, belongs to another producer or leaves the partition out. Each is
printed with the offset "samsa txn abort --start-offset" takes.`,
		Example: `  samsa txn find-hanging
  samsa txn find-hanging --topic orders --max-transaction-timeout 15m`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			ctx := cmd.Context()
			prods, err := describeProducers(ctx, adm, pf.set())
			if err != nil {
				return err
			}
			var pids []int64
			for _, p := range prods {
				if p.CurrentTxnStartOffset >= 0 {
					pids = append(pids, p.ProducerID)
				}
			}
			byProducer := make(map[int64]kadm.ListedTransaction)
			var described kadm.DescribedTransactions
			if len(pids) > 0 {
				listed, err := adm.ListTransactions(ctx, pids, nil)
				if err != nil {
					return fmt.Errorf("list transactions: %w", err)
				}
				for _, l := range listed {
					byProducer[l.ProducerID] = l
				}
				if ids := listed.TransactionalIDs(); len(ids) > 0 {
					if described, err = adm.DescribeTransactions(ctx, ids...); err != nil {
						return fmt.Errorf("describe transactions: %w", err)
					}
				}
			}
			hanging := findHanging(prods, byProducer, described, time.Now().UnixMilli(), maxTimeout)
			return printHanging(e.stdout, hanging)
		},
	}
	pf.add(cmd, false)
	cmd.Flags().DurationVar(&maxTimeout, "max-transaction-timeout", 15*time.Minute,
		"the brokers' transaction.max.timeout.ms: transactions open longer are candidates")
	return cmd
}

func printHanging(w io.Writer, hanging []openTxn) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tPRODUCER-ID\tEPOCH\tCOORDINATOR-EPOCH\tSTART-OFFSET\tLAST-WRITE\tWHY")
	for _, h := range hanging {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch,
			h.CoordinatorEpoch, h.CurrentTxnStartOffset, formatMillis(h.LastTimestamp), h.Why)
	}
	return tw.Flush()
}

func newTxnAbortCmd(g *globals, e env) *cobra.Command {
	var (
		pf          partitionFlags
		startOffset int64
	)
	cmd := &cobra.Command{
		Use:   "abort",
		Short: "Abort the open transaction of a partition that starts at an offset",
		Long: `Abort a hanging transaction: the partition's producer whose open
transaction starts at --start-offset (see find-hanging) gets an ABORT
marker written by the partition leader (WriteTxnMarkers, which needs
CLUSTER_ACTION on the cluster), with the producer's epoch and the
coordinator epoch of its last marker. The last stable offset then moves
past it. Aborting a transaction whose coordinator is still working on it
loses that transaction's writes in this partition: use it only on what
find-hanging reports.`,
		Example: `  samsa txn abort --topic orders --partition 3 --start-offset 1200`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pf.partition < 0 {
				return usageIn(cmd, fmt.Errorf("--partition is required"))
			}
			if startOffset < 0 {
				return usageIn(cmd, fmt.Errorf("--start-offset is required"))
			}
			adm, err := newAdmin(g)
			if err != nil {
				return err
			}
			defer adm.Close()
			ctx := cmd.Context()
			prods, err := describeProducers(ctx, adm, pf.set())
			if err != nil {
				return err
			}
			var target *kadm.DescribedProducer
			for i := range prods {
				if prods[i].CurrentTxnStartOffset == startOffset {
					target = &prods[i]
				}
			}
			if target == nil {
				return fmt.Errorf("%s-%d has no open transaction starting at offset %d", pf.topic, pf.partition, startOffset)
			}
			s := make(kadm.TopicsSet)
			s.Add(pf.topic, pf.partition)
			resps, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{
				ProducerID:       target.ProducerID,
				ProducerEpoch:    target.ProducerEpoch,
				Commit:           false,
				CoordinatorEpoch: target.CoordinatorEpoch,
				Topics:           s,
			})
			if err != nil {
				return fmt.Errorf("write abort marker: %w", err)
			}
			for _, r := range resps {
				for _, t := range r.Topics {
					for _, p := range t.Partitions {
						if p.Err != nil {
							return fmt.Errorf("write abort marker to %s-%d: %w", p.Topic, p.Partition, p.Err)
						}
					}
				}
			}
			fmt.Fprintf(e.stdout, "aborted the transaction of producer %d (epoch %d) in %s-%d starting at offset %d\n",
				target.ProducerID, target.ProducerEpoch, pf.topic, pf.partition, startOffset)
			return nil
		},
	}
	pf.add(cmd, true)
	cmd.Flags().Int64Var(&startOffset, "start-offset", -1, "the first offset of the transaction to abort (from find-hanging)")
	return cmd
}

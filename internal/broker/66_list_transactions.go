package broker

// ListTransactions: v0-1 (KIP-664)
//
// * v1: DurationFilterMillis (KIP-994): only transactions that started
//   more than that many milliseconds ago; -1 for all.
//
// Lists the transactional ids this broker coordinates, filtered by state
// names (an unknown name is returned in UnknownStateFilters) and producer
// ids, leaving out the ids the principal may not DESCRIBE. While a
// __transaction_state partition loads the answer is
// COORDINATOR_LOAD_IN_PROGRESS (Reference: Kafka
// TransactionStateManager.listTransactionStates). v2's
// TransactionalIDPattern is not served.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
	"samsa/internal/txn"
)

func (b *Broker) handleListTransactions(conn *server.Conn, req *kmsg.ListTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, name := range req.StateFilters {
		s, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, s)
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		return resp // only unknown states: nothing matches
	}
	ms, err := b.txns.List(f)
	if err != nil {
		resp.ErrorCode = txnCode(err, req.Version, 0)
		return resp
	}
	z := b.authzFor(conn)
	for _, m := range ms {
		if !z.transactionalID(opDescribe, m.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = m.TransactionalID, m.ProducerID, m.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

package broker

// DescribeTransactions: v0 (KIP-664)
//
// Describes transactional ids this broker coordinates: state, producer id
// and epoch, timeout, start time and partitions. DESCRIBE on each id is
// required (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an id coordinated
// elsewhere gets NOT_COORDINATOR, one whose partition is loading
// COORDINATOR_LOAD_IN_PROGRESS, an unknown one TRANSACTIONAL_ID_NOT_FOUND.
// Partitions of topics the principal may not DESCRIBE are left out
// (Reference: KafkaApis.handleDescribeTransactionsRequest).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"samsa/internal/server"
)

func (b *Broker) handleDescribeTransactions(conn *server.Conn, req *kmsg.DescribeTransactionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	z := b.authzFor(conn)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		if !z.transactionalID(opDescribe, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		m, err := b.txns.Describe(id)
		if err != nil {
			st.ErrorCode = txnCode(err, req.Version, 0)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State = m.State.String()
		st.TimeoutMillis = m.TimeoutMs
		st.StartTimestamp = m.TxnStartMs
		st.ProducerID, st.ProducerEpoch = m.ProducerID, m.ProducerEpoch
		for _, p := range m.Partitions {
			if !z.topic(opDescribe, p.Topic) {
				continue
			}
			if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == p.Topic {
				st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, p.Partition)
				continue
			}
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic, t.Partitions = p.Topic, []int32{p.Partition}
			st.Topics = append(st.Topics, t)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

package broker

// SetTxnOffsetsVerifiedHook makes every TxnOffsetCommit call f with its
// group between its verification and its append, until the returned
// function is called. Tests that set it must act only on their own group:
// the hook is shared by every broker of the test binary.
func SetTxnOffsetsVerifiedHook(f func(group string)) (restore func()) {
	txnOffsetsVerifiedHook.Store(&f)
	return func() { txnOffsetsVerifiedHook.Store(nil) }
}

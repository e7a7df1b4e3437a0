package broker

// SetTxnOffsetsVerifiedHook makes every TxnOffsetCommit call f with its
// group between its verification and its append, until the returned
// function is called. Tests that set it must act only on their own group:
// the hook is shared by every broker of the test binary.
func SetTxnOffsetsVerifiedHook(f func(group string)) (restore func()) {
	txnOffsetsVerifiedHook.Store(&f)
	return func() { txnOffsetsVerifiedHook.Store(nil) }
}

// SetShareGroupEmptyHook makes AlterShareGroupOffsets and
// DeleteShareGroupOffsets call f with their group once it is found
// empty, with the group's change lock held and before its state is
// written, until the returned function is called. Tests that set it must
// act only on their own group.
func SetShareGroupEmptyHook(f func(group string)) (restore func()) {
	shareGroupEmptyHook.Store(&f)
	return func() { shareGroupEmptyHook.Store(nil) }
}

// SetShareGroupDeletingHook makes a deletion of share group group call f
// once its deleting topics are written; an error from f ends the
// deletion there. Until the returned function is called.
func SetShareGroupDeletingHook(group string, f func() error) (restore func()) {
	shareGroupDeletingHooks.Store(group, f)
	return func() { shareGroupDeletingHooks.Delete(group) }
}

// Package vfs is the file system that storage opens files through, so that
// tests can run the same code on memory, simulate a power cut and inject
// IO errors.
//
//	FS / File      the interfaces (vfs.go)
//	Default        the operating system (os.go); Sync is fdatasync
//	MemFS          in memory, safe for concurrent use; CrashClone keeps
//	               only what Sync and SyncDir made durable (mem.go)
//	Volatile       the operating system with unsynced file data kept in
//	               the process's memory until Sync, so that kill -9 is a
//	               power cut (volatile.go; SAMSA_TEST_VOLATILE_WRITES)
//	WithErrors     wraps any FS; an Injector fails the Nth write, sync,
//	               dir sync, create, rename, remove or truncate, or cuts a
//	               write short, with ErrInjected (errorfs.go)
//
// A crash test, step by step:
//
//  1. fs := vfs.NewMemFS(); run the code under test on fs.
//  2. crashed := fs.CrashClone() at the moment of the simulated power cut.
//  3. Recover from crashed and check that every acknowledged write is
//     there: anything acknowledged before its Sync (or, for a new or renamed
//     file, before its directory's SyncDir) is lost in the clone.
//
// Invariants of MemFS:
//   - a file's durable content is exactly its content at its last Sync;
//     writes, truncations and overwrites after it never change it;
//   - a directory's durable entries are exactly its entries at its last
//     SyncDir, MkdirAll and the root's own entries included (only the
//     root itself is always there);
//   - a clone shares nothing with its source.
//
// Lock order: MemFS.mu is the only lock of a MemFS; Injector.mu is taken
// alone and never held across a call into the wrapped FS.
package vfs

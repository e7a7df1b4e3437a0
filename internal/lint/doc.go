// Package lint holds the project's house rules as tests, so that `go test
// ./...` checks them: the import arrows between samsa's packages
// (docs/architecture.md), typed atomics only, and %w for wrapped causes.
package lint

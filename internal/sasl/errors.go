package sasl

import "fmt"

// errorf wraps sentinel with a fixed, secret-free reason.
func errorf(sentinel error, reason string) error {
	return fmt.Errorf("%w: %s", sentinel, reason)
}

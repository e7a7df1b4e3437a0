package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// LogPackages are the package names log.level.overrides accepts: the
// value of the pkg attribute that each package's logger carries.
var LogPackages = []string{"admin", "broker", "cluster", "group", "replica", "server", "storage", "tlsconfig", "txn"}

var logPackagesDoc = strings.Join(LogPackages, ", ")

// ParseLogLevel parses debug, info, warn or error in any case, and the
// offset forms log/slog accepts (info+2).
func ParseLogLevel(v string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.TrimSpace(v))); err != nil {
		return 0, errors.New("not a level (debug, info, warn, error)")
	}
	return l, nil
}

func levelValid(v string) error {
	_, err := ParseLogLevel(v)
	return err
}

// ParseLogLevelOverrides parses log.level.overrides: a comma-separated
// list of package=level. A package not in LogPackages is an error, so a
// typo does not pass silently.
func ParseLogLevelOverrides(v string) (map[string]slog.Level, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, nil
	}
	out := make(map[string]slog.Level, len(items))
	for _, it := range items {
		pkg, lv, ok := strings.Cut(it, "=")
		pkg = strings.TrimSpace(pkg)
		if !ok || pkg == "" {
			return nil, fmt.Errorf("item %q: want package=level", it)
		}
		known := false
		for _, p := range LogPackages {
			known = known || p == pkg
		}
		if !known {
			return nil, fmt.Errorf("item %q: unknown package %s (one of %s)", it, pkg, logPackagesDoc)
		}
		l, err := ParseLogLevel(lv)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", it, err)
		}
		out[pkg] = l
	}
	return out, nil
}

func levelOverridesValid(v string) error {
	_, err := ParseLogLevelOverrides(v)
	return err
}

// resolveLogging sets the log.* configs of the broker's own log.
func (b *Broker) resolveLogging(r *resolver) {
	b.LogFormat = strings.TrimSpace(r.str("log.format"))
	b.LogSlowRequestMs = r.int64("log.slow.request.ms")
	var err error
	if b.LogLevel, err = ParseLogLevel(r.str("log.level")); err != nil && r.err == nil {
		r.err = fmt.Errorf("%w: log.level: %w", ErrInvalidConfig, err)
	}
	if b.LogLevelOverrides, err = ParseLogLevelOverrides(r.str("log.level.overrides")); err != nil && r.err == nil {
		r.err = fmt.Errorf("%w: log.level.overrides: %w", ErrInvalidConfig, err)
	}
}

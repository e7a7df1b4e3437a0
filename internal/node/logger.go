package node

import (
	"context"
	"io"
	"log/slog"

	"samsa/internal/config"
)

// PkgKey is the attribute that names the package a logger was handed to:
// node and broker give each package logger.With(PkgKey, "replica") and
// so on, and log.level.overrides picks levels by its value.
const PkgKey = "pkg"

// NewLogger returns the broker's logger writing to w in cfg's log.format
// (text or json) at cfg's log.level, with the levels of
// log.level.overrides for the packages they name.
func NewLogger(w io.Writer, cfg *config.Broker) *slog.Logger {
	return slog.New(newPkgLevelHandler(w, cfg.LogFormat, cfg.LogLevel, cfg.LogLevelOverrides))
}

// newPkgLevelHandler returns a handler writing format ("json", else text)
// to w that lets a record through if its level is at least the level of
// its logger's package: overrides[pkg], else level.
func newPkgLevelHandler(w io.Writer, format string, level slog.Level, overrides map[string]slog.Level) *pkgLevelHandler {
	lowest := level
	for _, l := range overrides {
		lowest = min(lowest, l)
	}
	opts := &slog.HandlerOptions{Level: lowest}
	var root slog.Handler
	if format == "json" {
		root = slog.NewJSONHandler(w, opts)
	} else {
		root = slog.NewTextHandler(w, opts)
	}
	return &pkgLevelHandler{root: root, inner: root, level: level, overrides: overrides, min: level}
}

// pkgLevelHandler filters records by the level of their logger's package.
// The package is the last PkgKey attribute given to WithAttrs outside any
// group; it is written once, as the first attribute, even when a package
// hands its logger on to another with a new PkgKey (broker to replica).
// It is safe for concurrent use; WithAttrs and WithGroup return new
// handlers and change none.
type pkgLevelHandler struct {
	root      slog.Handler // the format handler, at the lowest level of all
	level     slog.Level   // of a package with no override
	overrides map[string]slog.Level

	pkg   string
	min   slog.Level   // the level of pkg
	ops   []handlerOp  // attributes and groups added since root, PkgKey excluded
	inner slog.Handler // root with pkg and ops applied
}

// handlerOp is one WithGroup (group != "") or WithAttrs call.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

func (h *pkgLevelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *pkgLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.inner.Handle(ctx, r)
}

func (h *pkgLevelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	c := *h
	c.ops = append(h.ops[:len(h.ops):len(h.ops)], handlerOp{attrs: as})
	grouped := false
	for _, op := range h.ops {
		grouped = grouped || op.group != ""
	}
	pkg := ""
	if !grouped {
		kept := make([]slog.Attr, 0, len(as))
		for _, a := range as {
			if a.Key == PkgKey {
				pkg = a.Value.String()
			} else {
				kept = append(kept, a)
			}
		}
		c.ops[len(c.ops)-1].attrs = kept
	}
	if pkg == "" {
		c.inner = h.inner.WithAttrs(as)
		return &c
	}
	// NB: a new package rebuilds from root, so that the record carries
	// one PkgKey, not the parent's and its own.
	c.pkg = pkg
	c.min = h.level
	if l, ok := h.overrides[pkg]; ok {
		c.min = l
	}
	c.inner = h.root.WithAttrs([]slog.Attr{slog.String(PkgKey, pkg)})
	for _, op := range c.ops {
		if op.group != "" {
			c.inner = c.inner.WithGroup(op.group)
		} else if len(op.attrs) > 0 {
			c.inner = c.inner.WithAttrs(op.attrs)
		}
	}
	return &c
}

func (h *pkgLevelHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.ops = append(h.ops[:len(h.ops):len(h.ops)], handlerOp{group: name})
	c.inner = h.inner.WithGroup(name)
	return &c
}

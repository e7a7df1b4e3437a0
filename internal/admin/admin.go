package admin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the admin HTTP server.
//
// Start and Close may be called from any goroutine; the handlers are safe
// for concurrent use.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when the serving goroutine exits

	closeOnce sync.Once
	closeErr  error
}

// ConsolePath is where the web console is mounted: on the admin listener
// when it serves the console, and on a listener of the console's own.
const ConsolePath = "/console/"

// Start listens on addr and serves until Close. ready reports readiness for
// /readyz; reg is gathered for /metrics (process and Go collectors are added
// to it); console, when not nil, serves ConsolePath and the root redirects
// to it; log receives a serving failure.
func Start(addr string, reg *prometheus.Registry, ready func() bool, console http.Handler, log *slog.Logger) (*Server, error) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if console != nil {
		mountConsole(mux, console)
	}
	return serve(addr, mux, log)
}

// StartConsole serves only the console on addr (console.listener), the
// root redirecting to it.
func StartConsole(addr string, console http.Handler, log *slog.Logger) (*Server, error) {
	mux := http.NewServeMux()
	mountConsole(mux, console)
	return serve(addr, mux, log)
}

func mountConsole(mux *http.ServeMux, console http.Handler) {
	mux.Handle(ConsolePath, console)
	mux.Handle("/console", console)
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, ConsolePath, http.StatusSeeOther)
	})
}

func serve(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin HTTP server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and waits for its goroutine. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.closeErr = s.srv.Shutdown(ctx)
		<-s.done
	})
	return s.closeErr
}

package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html.
var pageNames = []string{"error", "login", "overview", "topics", "topic", "messages", "groups", "group",
	"brokers", "security", "transactions"}

var funcs = template.FuncMap{
	"bytes": humanBytes,
	"rate": func(v float64) string {
		switch {
		case v >= 100:
			return strconv.FormatFloat(v, 'f', 0, 64)
		case v > 0:
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return "0"
	},
	"ms": func(ms int64) string {
		if ms <= 0 {
			return "-"
		}
		return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
	},
	"q":     url.QueryEscape,
	"int64": func(i int) int64 { return int64(i) },
	"join":  joinInt32,
}

// humanBytes is n in B, KiB, MiB, GiB or TiB.
func humanBytes(n int64) string {
	if n < 0 {
		return "-"
	}
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, [...]string{"B", "KiB", "MiB", "GiB", "TiB"}[i])
}

func joinInt32(xs []int32) string {
	var b []byte
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(b)
}

func (s *Server) parseTemplates() error {
	s.pages = make(map[string]*template.Template, len(pageNames))
	for _, p := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", p, err)
		}
		s.pages[p] = t
	}
	return nil
}

// pageData is what layout.html renders around a page's content.
type pageData struct {
	Title, Page   string
	User          string
	CSRF          string
	ReadOnly      bool
	LoginRequired bool
	NodeID        int32
	Version       string
	Flash         string
	FlashOK       bool
	D             any
}

// render writes page with data d. Every value reaches the page through
// html/template, which escapes it for where it lands.
func (s *Server) render(w http.ResponseWriter, r *http.Request, sess *session, status int, page, title string, d any) {
	pd := pageData{Title: title, Page: page, ReadOnly: s.cfg.ReadOnly, LoginRequired: s.LoginRequired(),
		NodeID: s.cfg.NodeID, Version: s.cfg.Version, D: d}
	if sess != nil {
		pd.User, pd.CSRF = sess.user, sess.csrf
		pd.Flash, pd.FlashOK = sess.takeFlash()
	}
	var buf bytes.Buffer
	if err := s.pages[page].Execute(&buf, pd); err != nil {
		s.log.Error("console: render", "page", page, "err", err)
		http.Error(w, "render error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// page renders a page with status 200.
func (rq *request) page(s *Server, page, title string, d any) error {
	s.render(rq.w, rq.r, rq.sess, http.StatusOK, page, title, d)
	return nil
}

// done ends an action: the outcome is kept for the next page, which the
// browser is sent to (post, redirect, get).
//
// Every change asked through the console is logged with who asked and
// what came of it, so that the broker's log says which user changed the
// cluster from a browser.
func (rq *request) done(to, msg string, ok bool) error {
	user := rq.sess.user
	if user == "" {
		user = "ANONYMOUS"
	}
	rq.log.Info("console: change", "user", user, "action", rq.r.URL.Path, "ok", ok, "outcome", msg)
	rq.sess.setFlash(msg, ok)
	http.Redirect(rq.w, rq.r, to, http.StatusSeeOther)
	return nil
}

package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"samsa/internal/testutil"
)

// web is a browser without JavaScript: a cookie jar and the console's
// base URL.
type web struct {
	t    testing.TB
	base string // http://host:port
	c    *http.Client
}

// startConsole starts a broker whose admin listener serves the console
// and returns it with a client of the console.
func startConsole(t testing.TB, overrides ...string) (*testutil.Broker, *web) {
	t.Helper()
	b := testutil.StartBroker(t, append([]string{"admin.listener=127.0.0.1:0"}, overrides...)...)
	return b, newWeb(t, b.Node.ConsoleURL())
}

func newWeb(t testing.TB, consoleURL string) *web {
	t.Helper()
	if consoleURL == "" {
		t.Fatal("the broker serves no console")
	}
	u, err := url.Parse(consoleURL)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	return &web{t: t, base: u.Scheme + "://" + u.Host, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (w *web) do(req *http.Request) (int, string) {
	w.t.Helper()
	resp, err := w.c.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// get fetches a console path (such as /console/topics).
func (w *web) get(path string) (int, string) {
	w.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", w.base+path, nil)
	return w.do(req)
}

// mustGet fetches a page that must answer 200.
func (w *web) mustGet(path string) string {
	w.t.Helper()
	st, body := w.get(path)
	if st != http.StatusOK {
		w.t.Fatalf("GET %s: status %d\n%s", path, st, body)
	}
	return body
}

var csrfRE = regexp.MustCompile(`name="csrf" (?:value|content)="([0-9a-f]+)"`)

// csrf returns the session's CSRF token, read from a form of page.
func (w *web) csrf(page string) string {
	w.t.Helper()
	m := csrfRE.FindStringSubmatch(w.mustGet(page))
	if m == nil {
		w.t.Fatalf("no CSRF token on %s", page)
	}
	return m[1]
}

// postRaw posts form as it is, following the redirect.
func (w *web) postRaw(path string, form url.Values, header http.Header) (int, string) {
	w.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", w.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	return w.do(req)
}

// post posts form with the session's CSRF token (read from the overview).
func (w *web) post(path string, form url.Values) (int, string) {
	w.t.Helper()
	form.Set("csrf", w.csrf("/console/"))
	return w.postRaw(path, form, nil)
}

// flash returns the text of the page's action outcome, and whether it
// says the action succeeded.
func flash(t testing.TB, body string) (string, bool) {
	t.Helper()
	n := find(parse(t, body), func(n *html.Node) bool { return attr(n, "id") == "flash" })
	if n == nil {
		return "", false
	}
	return text(n), strings.Contains(attr(n, "class"), "ok")
}

func parse(t testing.TB, body string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func find(n *html.Node, f func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && f(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if m := find(c, f); m != nil {
			return m
		}
	}
	return nil
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

// byID returns the text of the element with id, or fails.
func byID(t testing.TB, body, id string) string {
	t.Helper()
	n := find(parse(t, body), func(n *html.Node) bool { return attr(n, "id") == id })
	if n == nil {
		t.Fatalf("no element #%s in\n%s", id, body)
	}
	return text(n)
}

// rows returns the cells' text of each row of the body of table id.
func rows(t testing.TB, body, id string) [][]string {
	t.Helper()
	tbl := find(parse(t, body), func(n *html.Node) bool { return n.Data == "table" && attr(n, "id") == id })
	if tbl == nil {
		t.Fatalf("no table #%s in\n%s", id, body)
	}
	tb := find(tbl, func(n *html.Node) bool { return n.Data == "tbody" })
	var out [][]string
	for tr := tb.FirstChild; tr != nil; tr = tr.NextSibling {
		if tr.Type != html.ElementNode || tr.Data != "tr" {
			continue
		}
		var cells []string
		for td := tr.FirstChild; td != nil; td = td.NextSibling {
			if td.Type == html.ElementNode && td.Data == "td" {
				cells = append(cells, text(td))
			}
		}
		if len(cells) == 1 && strings.HasPrefix(cells[0], "No ") {
			continue // the table's "No records." row
		}
		out = append(out, cells)
	}
	return out
}

// column returns column i of rows.
func column(rs [][]string, i int) []string {
	out := make([]string, len(rs))
	for j, r := range rs {
		out[j] = r[i]
	}
	return out
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

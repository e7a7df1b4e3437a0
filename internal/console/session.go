package console

import (
	"container/list"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cookieName is the session cookie.
const cookieName = "samsa_console"

// maxSessions bounds the sessions kept; the least recently used goes
// first, so that visitors who never log in cannot grow memory.
const maxSessions = 1024

// session is one browser's state: its CSRF token and, once logged in,
// the user's own Kafka client, through which the broker authenticates
// and authorizes every request it makes.
type session struct {
	id, csrf string
	user     string // "" before login, and for the anonymous principal
	mech     string
	client   *kgo.Client // nil: the shared anonymous client
	last     time.Time   // guarded by sessionStore.mu
	elem     *list.Element

	// mu guards flash and flashOK: the outcome of the last action,
	// shown once on the next page.
	mu      sync.Mutex
	flash   string
	flashOK bool
}

func (sess *session) setFlash(msg string, ok bool) {
	sess.mu.Lock()
	sess.flash, sess.flashOK = msg, ok
	sess.mu.Unlock()
}

func (sess *session) takeFlash() (string, bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	msg, ok := sess.flash, sess.flashOK
	sess.flash = ""
	return msg, ok
}

// sessionStore holds the sessions. Its methods are safe for concurrent
// use; mu guards every field.
type sessionStore struct {
	mu   sync.Mutex
	byID map[string]*session
	lru  *list.List // front: most recently used
	max  int
	idle time.Duration
	now  func() time.Time
}

func newSessionStore(max int, idle time.Duration, now func() time.Time) *sessionStore {
	return &sessionStore{byID: map[string]*session{}, lru: list.New(), max: max, idle: idle, now: now}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// get returns the live session id names, or nil.
func (st *sessionStore) get(id string) *session {
	st.mu.Lock()
	sess := st.byID[id]
	if sess == nil {
		st.mu.Unlock()
		return nil
	}
	now := st.now()
	if now.Sub(sess.last) > st.idle {
		st.removeLocked(sess)
		st.mu.Unlock()
		closeClient(sess)
		return nil
	}
	sess.last = now
	st.lru.MoveToFront(sess.elem)
	st.mu.Unlock()
	return sess
}

// add stores a new session, evicting the least recently used one beyond
// max.
func (st *sessionStore) add(sess *session) {
	st.mu.Lock()
	sess.last = st.now()
	sess.elem = st.lru.PushFront(sess)
	st.byID[sess.id] = sess
	var evicted []*session
	for st.lru.Len() > st.max {
		old := st.lru.Back().Value.(*session)
		st.removeLocked(old)
		evicted = append(evicted, old)
	}
	st.mu.Unlock()
	for _, old := range evicted {
		closeClient(old)
	}
}

func (st *sessionStore) remove(sess *session) {
	st.mu.Lock()
	ours := st.byID[sess.id] == sess
	if ours {
		st.removeLocked(sess)
	}
	st.mu.Unlock()
	if ours {
		closeClient(sess)
	}
}

// removeLocked drops sess from the store; the caller closes its client
// once mu is released (closing waits for the client's goroutines and
// connections, which no other request should wait behind).
func (st *sessionStore) removeLocked(sess *session) {
	delete(st.byID, sess.id)
	st.lru.Remove(sess.elem)
}

func closeClient(sess *session) {
	if sess.client != nil {
		sess.client.Close()
	}
}

func (st *sessionStore) closeAll() {
	st.mu.Lock()
	all := make([]*session, 0, len(st.byID))
	for _, sess := range st.byID {
		st.removeLocked(sess)
		all = append(all, sess)
	}
	st.mu.Unlock()
	for _, sess := range all {
		closeClient(sess)
	}
}

// sessionFor returns the request's session; when it has none and create
// is set, it makes one and sets its cookie.
func (s *Server) sessionFor(w http.ResponseWriter, r *http.Request, create bool) *session {
	if c, err := r.Cookie(cookieName); err == nil {
		if sess := s.sessions.get(c.Value); sess != nil {
			return sess
		}
	}
	if !create {
		return nil
	}
	sess := &session{id: randomToken(), csrf: randomToken()}
	s.sessions.add(sess)
	s.setCookie(w, r, sess.id, 0)
	return sess
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: value, Path: Prefix + "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
}

// checkCSRF reports whether a POST carries its session's token and, when
// the browser names one, comes from the console's own origin.
func (s *Server) checkCSRF(r *http.Request, sess *session) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	tok := r.PostFormValue("csrf")
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(sess.csrf)) == 1
}

// loginPage shows the login form, or goes to the overview when no login
// is needed.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	sess := s.sessionFor(w, r, true)
	if !s.LoginRequired() {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	s.render(w, r, sess, http.StatusOK, "login", "Log in", map[string]any{
		"Mechanisms": s.cfg.Mechanisms, "Next": safeNext(r.FormValue("next")),
	})
}

// safeNext keeps a redirect target inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix+"/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Prefix + "/"
	}
	return next
}

// login authenticates the user to the cluster with their own
// credentials: a Kafka client with their SASL mechanism must read the
// cluster's metadata. The password is kept only inside that client.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	pre := s.sessionFor(w, r, false)
	if pre == nil || !s.checkCSRF(r, pre) {
		s.fail(w, r, pre, http.StatusForbidden, errCSRF)
		return
	}
	if !s.LoginRequired() {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	user, pass, mech := r.PostFormValue("username"), r.PostFormValue("password"), r.PostFormValue("mechanism")
	again := func(msg string) {
		s.render(w, r, pre, http.StatusUnauthorized, "login", "Log in", map[string]any{
			"Mechanisms": s.cfg.Mechanisms, "Next": safeNext(r.PostFormValue("next")), "Error": msg, "User": user,
		})
	}
	if mech == OAuthBearer && pass != "" {
		// The name shown is the token's subject; the broker, which
		// verifies the token, decides what it is allowed.
		user = tokenSubject(pass)
	}
	if user == "" || pass == "" || !slices.Contains(s.cfg.Mechanisms, mech) {
		again("give a user name and a password (for OAUTHBEARER, a token) and one of the listener's mechanisms")
		return
	}
	opts, err := s.clientOpts(mech, user, pass)
	if err != nil {
		again(err.Error())
		return
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		again(err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), pageTimeout)
	defer cancel()
	if _, err := kadm.NewClient(cl).BrokerMetadata(ctx); err != nil {
		cl.Close()
		s.log.Info("console: login failed", "user", user, "mechanism", mech, "remote", r.RemoteAddr, "err", err)
		again("login failed: " + err.Error())
		return
	}
	// A new session id at login, so that an id known before it is
	// worth nothing after.
	s.sessions.remove(pre)
	sess := &session{id: randomToken(), csrf: randomToken(), user: user, mech: mech, client: cl}
	s.sessions.add(sess)
	s.setCookie(w, r, sess.id, 0)
	s.log.Info("console: login", "user", user, "mechanism", mech, "remote", r.RemoteAddr)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the session and closes its client.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	sess := s.sessionFor(w, r, false)
	if sess == nil || !s.checkCSRF(r, sess) {
		s.fail(w, r, sess, http.StatusForbidden, errCSRF)
		return
	}
	s.sessions.remove(sess)
	s.setCookie(w, r, "", -1)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// tokenSubject returns the sub claim of a JWT, unverified, to name the
// session; "token" when it has none.
func tokenSubject(tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			var c struct {
				Sub string `json:"sub"`
			}
			if json.Unmarshal(b, &c) == nil && c.Sub != "" {
				return c.Sub
			}
		}
	}
	return "token"
}

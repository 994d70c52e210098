package console

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// The console: server-rendered pages on the admin listener, signed in by
// session cookie (the JSON API keeps bearer tokens).

// Cookies of the console.
const (
	sessionCookie = "ordersync_session"
	// csrfCookie holds the CSRF token of a browser not signed in (the
	// sign-in form, and every form without tokens configured): the form
	// must send it back, which another site cannot read to do.
	csrfCookie = "ordersync_csrf"
	csrfField  = "csrf"
)

// DefaultSessionTTL is how long a console session lasts: a working day, so
// nobody is signed out in the middle of one, while a cookie left behind
// on a shared machine, or taken from it, is worthless the next morning. It
// does not slide, so a request never has to write.
const DefaultSessionTTL = 12 * time.Hour

// endTimeout bounds ending a session after the request's own context may
// have ended.
const endTimeout = 5 * time.Second

// maxFormBody bounds a console form: a token, a CSRF token, a few fields.
const maxFormBody = 64 << 10

// contentSecurityPolicy lets pages load only this server's files: no
// inline script or style, no other origin, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// IsPath reports whether path is the console's: its root and everything
// under /console/.
func IsPath(path string) bool {
	return path == "/" || strings.HasPrefix(path, "/console/")
}

// Routes adds the console's routes to mux.
func (s *Console) Routes(mux Mux) {
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", Static()))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /console/{$}", s.overviewPage)
	mux.HandleFunc("GET /console/sign-in", func(w http.ResponseWriter, r *http.Request) {
		s.page(w, r, http.StatusOK, "signin.html", &Page{Title: "Sign in", Data: consoleReturn(r.URL.Query().Get("next"))})
	})
	mux.HandleFunc("POST /console/sign-in", s.signIn)
	mux.HandleFunc("POST /console/sign-out", s.signOut)
	s.routeOrders(mux)
	s.routeDeadLetters(mux)
	s.routeEndpoints(mux)
	s.routeFailed(mux)
	s.routeTotals(mux)
	s.routeExport(mux)
	s.routeAudit(mux)
	mux.HandleFunc("GET /console/overview.json", s.overviewJSON)
}

// openConsole reports whether a console request needs no session: the
// sign-in page and form, and the static files.
func openConsole(r *http.Request) bool {
	return r.URL.Path == "/console/sign-in" || strings.HasPrefix(r.URL.Path, "/console/static/")
}

// Serve authenticates a console request by its session (without tokens,
// as loopback, which the office's guard has checked), holds every form to
// its CSRF token, and serves it through the office (Office.ServeAs).
func (s *Console) Serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on a form post, which the guard refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if api.IsWrite(r.Method) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBody)
	}
	w, finish := s.asPages(w, r)
	defer finish()
	if openConsole(r) {
		s.office.ServeAs(w, r, ordersync.Principal{Name: "anonymous"}, ordersync.ViaConsole)
		return
	}
	p, cookie, err := s.consolePrincipal(r)
	if err != nil {
		if !errors.Is(err, errNoSession) {
			s.office.Fail(w, "find console session", err, "")
			return
		}
		if api.IsWrite(r.Method) {
			api.WriteProblem(w, http.StatusUnauthorized, "sign in first: this form needs a console session", nil)
			return
		}
		http.Redirect(w, r, signInLink(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	if pp, ok := w.(*problemPages); ok {
		pp.who = p
	}
	if api.IsWrite(r.Method) && !s.validCSRF(r, cookie) {
		api.WriteProblem(w, http.StatusForbidden, "the form's CSRF token is missing or wrong: reload the page and send it again", nil)
		return
	}
	s.office.ServeAs(w, r, p, ordersync.ViaConsole)
}

var errNoSession = errors.New("no console session")

// signInLink is the sign-in page that returns to the console page next
// once signed in; the plain sign-in page for the overview, where a
// sign-in goes anyway, and for the overview's figures (JSON its script
// reads, no page to land on).
func signInLink(next string) string {
	if next = consoleReturn(next); next == "" || next == "/console/" || strings.HasSuffix(path.Base(next), ".json") {
		return "/console/sign-in"
	}
	return "/console/sign-in?" + url.Values{"next": {next}}.Encode()
}

// consoleReturn is p when it is a page of this console to go back to, a
// path and query under /console/ on this server; "" otherwise, so that a
// link's "next" or "back" never sends a browser to another site (an open
// redirect), nor to a path that leaves /console/ by "..".
func consoleReturn(p string) string {
	if !strings.HasPrefix(p, "/console/") || strings.ContainsAny(p, "\\\x00\r\n\t") || len(p) > 4096 {
		return ""
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return ""
	}
	if c := path.Clean(u.Path); (c != "/console" && !strings.HasPrefix(c, "/console/")) || strings.HasPrefix(c, "/console/sign-") {
		return ""
	}
	return u.RequestURI()
}

// consolePrincipal is who a console request acts as, and the session
// cookie's value: without tokens, loopback; with them, the token the
// session was started with, in its configured role, as long as it is
// still configured (a session of a removed or replaced token ends).
func (s *Console) consolePrincipal(r *http.Request) (ordersync.Principal, string, error) {
	if len(s.office.Tokens()) == 0 {
		return ordersync.Loopback, "", nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return ordersync.Principal{}, "", errNoSession
	}
	id := sessionID(c.Value)
	sess, err := s.cfg.Sessions.FindConsoleSession(r.Context(), id, s.cfg.Clock())
	if errors.Is(err, ordersync.ErrNotFound) {
		return ordersync.Principal{}, "", errNoSession
	}
	if err != nil {
		return ordersync.Principal{}, "", err
	}
	for _, t := range s.office.Tokens() {
		if subtle.ConstantTimeCompare([]byte(t.Identity()), []byte(sess.TokenIdentity)) == 1 {
			return ordersync.Principal{Name: t.Name, Role: t.Role}, c.Value, nil
		}
	}
	if err := s.cfg.Sessions.DeleteConsoleSession(r.Context(), id); err != nil {
		s.cfg.Logger.Warn("admin: end the session of a removed token", "token", sess.TokenName, "err", err)
	}
	return ordersync.Principal{}, "", errNoSession
}

// sessionID is what the store keeps of a session cookie: its hash, so the
// database holds no cookie that would sign anyone in.
func sessionID(cookie string) string {
	sum := sha256.Sum256([]byte("ordersync console session\x00" + cookie))
	return hex.EncodeToString(sum[:])
}

// csrfOfSession is the CSRF token of a session: derived from its cookie,
// which another site can neither read nor guess.
func csrfOfSession(cookie string) string {
	sum := sha256.Sum256([]byte("ordersync console csrf\x00" + cookie))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// csrfToken is the CSRF token the page for r puts in its forms: the
// session's, or the browser's CSRF cookie's, set now when it has none.
func (s *Console) csrfToken(w http.ResponseWriter, r *http.Request, session string) string {
	if session != "" {
		return csrfOfSession(session)
	}
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	v := randomToken()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/console/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	return v
}

// validCSRF reports whether the form of r carries its CSRF token: the
// session's when signed in, otherwise the browser's CSRF cookie's.
func (s *Console) validCSRF(r *http.Request, session string) bool {
	sent := r.PostFormValue(csrfField)
	want := ""
	if session != "" {
		want = csrfOfSession(session)
	} else if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		want = c.Value
	}
	return want != "" && subtle.ConstantTimeCompare([]byte(sent), []byte(want)) == 1
}

// secure reports whether r came over TLS, to this listener or to a
// trusted proxy that says so: its cookies are then Secure.
func (s *Console) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.cfg.TrustedProxies.Trusts(r.RemoteAddr) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// Page is what every console template is given.
type Page struct {
	Title   string
	Message string
	// Flash is what the action that led here said, shown once.
	Flash     string
	Principal ordersync.Principal
	SignedIn  bool
	CSRF      string
	// Data is the page's own.
	Data any
}

// page renders the template name with p, filled with who asks and the
// CSRF token for its forms. It renders into a buffer first, so a failed
// template answers 500 rather than half a page.
func (s *Console) page(w http.ResponseWriter, r *http.Request, status int, name string, p *Page) {
	session := ""
	who, ok := s.office.Principal(r)
	if !ok || who.Role == "" {
		who = p.Principal // a problem page's, the office's answer being past
	}
	if who.Role != "" {
		p.Principal = who
		if c, err := r.Cookie(sessionCookie); err == nil && len(s.office.Tokens()) > 0 {
			session, p.SignedIn = c.Value, true
		}
	}
	p.CSRF = s.csrfToken(w, r, session)
	p.Flash = s.takeFlash(w, r)
	var buf bytes.Buffer
	if err := Templates.ExecuteTemplate(&buf, name, p); err != nil {
		s.office.Fail(w, "render "+name, err, "")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// signIn starts a session for a valid token. Wrong tokens from one client
// are slowed down, and the sign-in is refused outright while the client
// waits, so guessing costs time whatever the guess.
func (s *Console) signIn(w http.ResponseWriter, r *http.Request) {
	now := s.cfg.Clock()
	// The page asked for before signing in, read from the form's next
	// (the query's on the way in), kept through a failed attempt.
	next := consoleReturn(r.URL.Query().Get("next"))
	client := s.cfg.TrustedProxies.Client(r.RemoteAddr, r.Header.Values("X-Forwarded-For"))
	if wait := s.limiter.wait(client, now); wait > 0 {
		secs := strconv.Itoa(int((wait + time.Second - 1) / time.Second))
		w.Header().Set("Retry-After", secs)
		s.page(w, r, http.StatusTooManyRequests, "signin.html", &Page{Title: "Sign in",
			Message: "Too many wrong tokens from here: try again in " + secs + " s.", Data: next})
		return
	}
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			api.WriteProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("a console form has at most %d bytes", maxFormBody), nil)
			return
		}
		api.WriteProblem(w, http.StatusBadRequest, "the form cannot be read: "+err.Error(), nil)
		return
	}
	if n := consoleReturn(r.PostForm.Get("next")); n != "" {
		next = n
	}
	if !s.validCSRF(r, "") {
		s.page(w, r, http.StatusForbidden, "signin.html", &Page{Title: "Sign in",
			Message: "This form has expired (its CSRF token is missing or wrong): enter the token again.", Data: next})
		return
	}
	after := cmp.Or(next, "/console/")
	if len(s.office.Tokens()) == 0 {
		http.Redirect(w, r, after, http.StatusSeeOther)
		return
	}
	if s.cfg.Sessions == nil {
		api.WriteProblem(w, http.StatusNotImplemented, "console sessions are not enabled in this process", nil)
		return
	}
	token, ok := s.office.TokenOf(r.PostForm.Get("token"))
	if !ok {
		s.limiter.fail(client, now)
		s.office.Record(r, "console.sign-in", "client "+client, ordersync.OutcomeOfStatus(http.StatusUnauthorized))
		s.page(w, r, http.StatusUnauthorized, "signin.html", &Page{Title: "Sign in", Message: "That token is not valid here.", Data: next})
		return
	}
	s.limiter.succeed(client)
	cookie := randomToken()
	sess := ordersync.ConsoleSession{ID: sessionID(cookie), TokenIdentity: token.Identity(), TokenName: token.Name,
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.SessionTTL)}
	if err := s.cfg.Sessions.CreateConsoleSession(r.Context(), sess); err != nil {
		s.office.Fail(w, "create console session", err, "")
		return
	}
	s.office.SetPrincipal(r, ordersync.Principal{Name: token.Name, Role: token.Role})
	s.office.Record(r, "console.sign-in", "client "+client, ordersync.OutcomeOK)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: cookie, Path: "/", Expires: sess.ExpiresAt,
		MaxAge: int(s.cfg.SessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, after, http.StatusSeeOther)
}

// signOut ends the session at once, in the store: the cookie, were it
// kept, signs in no more.
func (s *Console) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" && s.cfg.Sessions != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), endTimeout)
		defer cancel()
		if err := s.cfg.Sessions.DeleteConsoleSession(ctx, sessionID(c.Value)); err != nil {
			s.office.Fail(w, "end console session", err, "")
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
}

// IsDownload reports whether r asks for a file the console links to (an
// export), which a browser fetches with its session cookie, not a bearer.
func IsDownload(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/exports/")
}

// ServeDownload serves a download by the console session: with tokens
// configured and no session, 401 as for any API request without a bearer.
func (s *Console) ServeDownload(w http.ResponseWriter, r *http.Request) {
	p, _, err := s.consolePrincipal(r)
	if errors.Is(err, errNoSession) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ordersync"`)
		api.WriteProblem(w, http.StatusUnauthorized, "a valid bearer token or console session is required", nil)
		return
	}
	if err != nil {
		s.office.Fail(w, "find console session", err, "")
		return
	}
	s.office.ServeAs(w, r, p, ordersync.ViaConsole)
}

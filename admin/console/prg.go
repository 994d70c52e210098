package console

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/admin/api"
)

// How the console answers what a browser did: an action ends in a
// redirect to a page (POST-redirect-GET), so that a reload repeats
// nothing, with its message carried once by a cookie; a refusal or a
// failure is a console page, never the API's JSON problem.

// flashCookie carries an action's message to the page it redirects to,
// which shows it once and clears it.
const flashCookie = "ordersync_flash"

// seeOther ends a console action by sending the browser to the console
// page to (a GET), showing message there once when given.
func (s *Console) seeOther(w http.ResponseWriter, r *http.Request, to, message string) {
	if message != "" {
		http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(message)),
			Path: "/console/", MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	}
	http.Redirect(w, r, cmp.Or(consoleReturn(to), "/console/"), http.StatusSeeOther)
}

// takeFlash is the message an action left for this page, cleared now.
func (s *Console) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/console/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil || !utf8.Valid(b) || len(b) > 500 {
		return ""
	}
	return string(b)
}

// fieldLabels are the console's labels of the parameters its forms send,
// so that a refusal names the field on screen, not the API's parameter.
var fieldLabels = map[string]string{
	"q": "Search", "status": "Status", "account": "Store", "createdFrom": "Created from", "createdTo": "Created before",
	"paidFrom": "Paid from", "paidTo": "Paid before", "cancelledFrom": "Cancelled from", "cancelledTo": "Cancelled before",
	"finalizedFrom": "Finalized from", "finalizedTo": "Finalized before", "reversedFrom": "Reversed from",
	"reversedTo": "Reversed before", "currency": "Currency", "minTotal": "Total from", "maxTotal": "Total up to",
	"sort": "Sort", "tz": "Time zone", "cursor": "Page", "limit": "Page size", "offset": "Skip", "count": "Count",
	"since": "Created since", "from": "From", "to": "To", "days": "Days", "by": "Days by", "format": "Format",
	"kind": "Kind", "actor": "Who", "action": "What", "reason": "Reason", "replayed": "Replayed", "window": "Window",
}

var paramWord = regexp.MustCompile(`\b[a-z]+[A-Z]?[a-zA-Z]*\b`)

// labelled are a refusal's fields by their labels on screen, each message
// with the parameters it names written as their labels too.
func labelled(fields map[string][]string) map[string][]string { return labelledAs(fields, nil) }

// labelledAs is labelled with a page's own labels where they differ from
// fieldLabels (own, by parameter).
func labelledAs(fields map[string][]string, own map[string]string) map[string][]string {
	if fields == nil {
		return nil
	}
	out := make(map[string][]string, len(fields))
	for name, msgs := range fields {
		label := cmp.Or(own[name], fieldLabel(name))
		for _, m := range msgs {
			out[label] = append(out[label], paramWord.ReplaceAllStringFunc(m, func(w string) string {
				if l, ok := fieldLabels[w]; ok && strings.ContainsAny(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
					return "«" + cmp.Or(own[w], l) + "»"
				}
				return w
			}))
		}
	}
	return out
}

// fieldLabel is the label on screen of the parameter name, or the name.
func fieldLabel(name string) string {
	if l, ok := fieldLabels[name]; ok {
		return l
	}
	return name
}

// ProblemView is the page of a refused or failed console request.
type ProblemView struct {
	Status int
	Detail string
	Fields map[string][]string
	// Back is the console page the request came from, when known.
	Back string
}

// problemPage answers a console request with a page saying what was
// refused or failed and why, with the fields by their labels, headed
// like every page for who, the session's principal (zero before one).
func (s *Console) problemPage(w http.ResponseWriter, r *http.Request, who ordersync.Principal, status int, detail string, fields map[string][]string) {
	v := &ProblemView{Status: status, Detail: detail, Fields: labelled(fields), Back: "/console/"}
	if ref, err := url.Parse(r.Referer()); err == nil && ref.Host == r.Host {
		v.Back = cmp.Or(consoleReturn(ref.RequestURI()), v.Back)
	}
	title := http.StatusText(status)
	switch status {
	case http.StatusForbidden:
		title = "Not allowed"
	case http.StatusBadRequest:
		title = "Cannot be done as asked"
	}
	s.page(w, r, status, "problem.html", &Page{Title: title, Principal: who, Data: v})
}

// problemPages turns the JSON problems a console page's handler answers
// with (through fail, writeProblem or the role check) into console
// pages: one place for every console route, present and to come. The
// console's JSON (overview.json, read by its script) keeps its problems.
type problemPages struct {
	http.ResponseWriter
	s *Console
	r *http.Request
	// who is the session's principal once known: r is the request before
	// the office resolved it, so the page cannot read it from r.
	who    ordersync.Principal
	status int
	buf    *bytes.Buffer
}

func (p *problemPages) WriteHeader(status int) {
	if p.buf == nil && p.status == 0 && strings.HasPrefix(p.Header().Get("Content-Type"), "application/problem+json") {
		p.status, p.buf = status, &bytes.Buffer{}
		return
	}
	p.ResponseWriter.WriteHeader(status)
}

func (p *problemPages) Write(b []byte) (int, error) {
	if p.buf != nil {
		return p.buf.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

func (p *problemPages) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// finish writes the page of a problem held back.
func (p *problemPages) finish() {
	if p.buf == nil {
		return
	}
	var pr api.Problem
	_ = json.Unmarshal(p.buf.Bytes(), &pr)
	p.Header().Del("Content-Type")
	p.s.problemPage(p.ResponseWriter, p.r, p.who, p.status, pr.Title, pr.Errors)
}

// asPages is w turning problems into pages for the console request r.
func (s *Console) asPages(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if strings.HasSuffix(r.URL.Path, ".json") {
		return w, func() {}
	}
	p := &problemPages{ResponseWriter: w, s: s, r: r}
	return p, p.finish
}

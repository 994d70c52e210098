package api

import (
	"encoding/json"
	"net/http"
)

// Problem is an RFC 7807 problem body, the same shape the payment link
// service answers with.
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Errors map[string][]string `json:"errors,omitempty"`
}

// maxRequestBody bounds what the API reads from a client.
const maxRequestBody = 1 << 20

// DecodeBody reads the request's JSON body into dst, at most
// maxRequestBody bytes; otherwise it answers 400 and returns false.
func DecodeBody(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err := dec.Decode(dst); err != nil {
		WriteProblem(w, http.StatusBadRequest, "the body is not valid JSON for this request: "+err.Error(), nil)
		return false
	}
	return true
}

// WriteProblem answers a problem body with status.
func WriteProblem(w http.ResponseWriter, status int, title string, fields map[string][]string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Problem{Type: "about:blank", Title: title, Status: status, Errors: fields})
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// When is h where the process has what h needs (on), and otherwise a 501
// naming the feature: the one guard for the parts a process's role may
// lack.
func When(on bool, feature string, h http.HandlerFunc) http.HandlerFunc {
	if on {
		return h
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		WriteProblem(w, http.StatusNotImplemented, feature+" is not enabled in this process", nil)
	}
}

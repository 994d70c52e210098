// Package httpstatus remembers the status an HTTP handler answered with,
// for whoever wraps the handler and acts on the outcome: the admin API's
// audit trail, the lab's recording proxy and the request lines serve logs.
package httpstatus

import "net/http"

// Writer is an http.ResponseWriter that remembers the first status written
// through it. Code is 0 until the handler writes a header or a body.
type Writer struct {
	http.ResponseWriter
	Code int
}

// WriteHeader implements http.ResponseWriter.
func (w *Writer) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter; a body written before any header
// goes out with 200, as net/http sends it.
func (w *Writer) Write(b []byte) (int, error) {
	if w.Code == 0 {
		w.Code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Status is the status the client got: 200 when the handler wrote nothing,
// as net/http answers then.
func (w *Writer) Status() int {
	if w.Code == 0 {
		return http.StatusOK
	}
	return w.Code
}

// Unwrap lets http.ResponseController reach the connection.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

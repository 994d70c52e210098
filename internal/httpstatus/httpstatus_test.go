package httpstatus

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name               string
		handle             func(w http.ResponseWriter)
		wantCode, wantStat int
	}{
		{"nothing written", func(http.ResponseWriter) {}, 0, http.StatusOK},
		{"body only", func(w http.ResponseWriter) { w.Write([]byte("x")) }, http.StatusOK, http.StatusOK},
		{"first header wins", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusTeapot)
		}, http.StatusAccepted, http.StatusAccepted},
		{"header then body", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("x"))
		}, http.StatusBadGateway, http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := &Writer{ResponseWriter: rec}
			tc.handle(w)
			if w.Code != tc.wantCode || w.Status() != tc.wantStat {
				t.Errorf("Code %d, Status() %d; want %d, %d", w.Code, w.Status(), tc.wantCode, tc.wantStat)
			}
			if http.NewResponseController(w).Flush() != nil {
				t.Error("Flush does not reach the wrapped writer")
			}
		})
	}
}

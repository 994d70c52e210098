package app

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/ordersync/ordersync/internal/httpstatus"
	"github.com/ordersync/ordersync/internal/proxy"
)

// requestIDKey holds a request's id in its context.
type requestIDKey struct{}

// withRequestID gives every request on a listener an id (a trusted proxy's
// X-Request-Id, else a new one: proxy.Trusted.RequestID), answers it in
// X-Request-Id, and carries it in the request's context, where
// requestLogHandler adds it to each line logged with that context. At
// debug level it logs one line per request.
func withRequestID(proxies proxy.Trusted, logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := proxies.RequestID(r.RemoteAddr, r.Header.Get("X-Request-Id"))
		w.Header().Set("X-Request-Id", id)
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		r = r.WithContext(ctx)
		if !logger.Enabled(ctx, slog.LevelDebug) {
			next.ServeHTTP(w, r)
			return
		}
		start, sw := time.Now(), &httpstatus.Writer{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		logger.DebugContext(ctx, "http request", "method", r.Method, "path", r.URL.Path,
			"status", sw.Status(), "duration", time.Since(start))
	})
}

// requestLogHandler adds the request_id of the request whose context a
// line is logged with.
type requestLogHandler struct{ slog.Handler }

func (h requestLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		rec = rec.Clone()
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestLogHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestLogHandler) WithGroup(name string) slog.Handler {
	return requestLogHandler{h.Handler.WithGroup(name)}
}

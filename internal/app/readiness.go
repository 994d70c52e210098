package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/ordersync/ordersync/internal/datadir"
)

// watchSpace watches the filesystems this process writes its data to:
// the embedded JetStream store and a SQLite file.
func (p *Program) watchSpace() (*datadir.Space, error) {
	mark, err := datadir.ParseWatermark(p.cfg.MinFreeSpace)
	if err != nil || mark.Off {
		return nil, err
	}
	dirs := map[string]string{}
	if p.embedded != nil {
		dirs["data"], dirs["jetstream"] = p.cfg.DataDir, datadir.JetStreamDir(p.cfg.DataDir)
	}
	if path := p.db.Path(); path != "" {
		dirs["database"] = filepath.Dir(path)
	}
	if len(dirs) == 0 {
		return nil, nil
	}
	return datadir.NewSpace(datadir.SpaceConfig{Dirs: dirs, Watermark: mark, Statfs: p.cfg.statfs, Registerer: p.reg, Logger: p.logger})
}

// admit refuses webhooks at once while they could not be made durable:
// the data's disk is below its watermark, or the embedded JetStream failed
// a write and waits for room to be reloaded (its streams answer no
// publish meanwhile, so each would wait for the publish timeout).
func (p *Program) admit() error {
	if p.space != nil {
		if err := p.space.Low(); err != nil {
			return err
		}
	}
	if p.embedded != nil {
		return p.embedded.WriteErr()
	}
	return nil
}

// ready is /readyz: 503 naming the cause while a webhook cannot be made
// durable (admit, then the database, then a probe write to the queue).
func (p *Program) ready(ctx context.Context) error {
	if p.draining.Load() {
		return errDraining
	}
	if err := p.admit(); err != nil {
		return err
	}
	if err := p.db.Ping(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if err := p.queue.Ready(ctx); err != nil {
		return fmt.Errorf("queue: %w", err)
	}
	return nil
}

// errDraining is why a process that is shutting down is not ready.
var errDraining = errors.New("draining: shutting down")

// closeWhileDraining answers every request with Connection: close once the
// drain began, so a client's connections end cleanly after their answer and
// its next request opens one where the load balancer now sends it, rather
// than finding an idle one closed under it when the listener stops.
func (p *Program) closeWhileDraining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

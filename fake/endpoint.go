package fake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ordersync/ordersync"
)

var _ ordersync.Endpoints = (*Store)(nil)

func copyEndpoint(e *ordersync.Endpoint) *ordersync.Endpoint {
	c := *e
	c.Events = slices.Clone(e.Events)
	if e.PreviousSecretUntil != nil {
		u := *e.PreviousSecretUntil
		c.PreviousSecretUntil = &u
	}
	return &c
}

func (s *Store) endpointsLocked() map[string]*ordersync.Endpoint {
	if s.back.endpoints == nil {
		s.back.endpoints = map[string]*ordersync.Endpoint{}
	}
	return s.back.endpoints
}

// CreateEndpoint adds an endpoint made at run time; an id already taken
// is ErrConflict.
func (s *Store) CreateEndpoint(_ context.Context, p ordersync.EndpointParams) (*ordersync.Endpoint, error) {
	if p.ID == "" {
		b := make([]byte, 8)
		rand.Read(b)
		p.ID = "ep_" + hex.EncodeToString(b)
	}
	op := fmt.Sprintf("create endpoint %s", p.ID)
	if err := ordersync.ValidateEndpointParams(p); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	eps := s.endpointsLocked()
	if _, ok := eps[p.ID]; ok {
		return nil, fmt.Errorf("%s: %w", op, ordersync.ErrConflict)
	}
	eps[p.ID] = newEndpoint(p, ordersync.EndpointFromAPI, now())
	return copyEndpoint(eps[p.ID]), nil
}

func newEndpoint(p ordersync.EndpointParams, source ordersync.EndpointSource, at time.Time) *ordersync.Endpoint {
	return &ordersync.Endpoint{ID: p.ID, URL: p.URL, Events: slices.Clone(p.Events), Description: p.Description, Source: source,
		Secret: p.Secret, RatePerSecond: p.RatePerSecond, CreatedAt: at, UpdatedAt: at}
}

// ListEndpoints returns every endpoint by id.
func (s *Store) ListEndpoints(context.Context) ([]*ordersync.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*ordersync.Endpoint{}
	for _, e := range s.back.endpoints {
		out = append(out, copyEndpoint(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// FindEndpoint returns the endpoint id names.
func (s *Store) FindEndpoint(_ context.Context, id string) (*ordersync.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.back.endpoints[id]
	if !ok {
		return nil, fmt.Errorf("find endpoint %s: %w", id, ordersync.ErrNotFound)
	}
	return copyEndpoint(e), nil
}

// UpdateEndpoint changes what u sets; a config endpoint takes only
// Disabled.
func (s *Store) UpdateEndpoint(_ context.Context, id string, u ordersync.EndpointUpdate) (*ordersync.Endpoint, error) {
	op := fmt.Sprintf("update endpoint %s", id)
	if err := ordersync.ValidateEndpointUpdate(u); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.back.endpoints[id]
	if !ok {
		return nil, fmt.Errorf("%s: %w", op, ordersync.ErrNotFound)
	}
	if cur.Source == ordersync.EndpointFromConfig && (u.URL != nil || u.Events != nil || u.Description != nil || u.RatePerSecond != nil) {
		return nil, fmt.Errorf("%s: %w", op, ordersync.ErrManagedByConfig)
	}
	if u.URL != nil {
		cur.URL = *u.URL
	}
	if u.Events != nil {
		cur.Events = slices.Clone(u.Events)
	}
	if u.Description != nil {
		cur.Description = *u.Description
	}
	if u.RatePerSecond != nil {
		cur.RatePerSecond = *u.RatePerSecond
	}
	if u.Disabled != nil && *u.Disabled != cur.Disabled {
		cur.Disabled, cur.DisabledReason = *u.Disabled, ""
		if cur.Disabled {
			cur.DisabledReason = ordersync.DisabledManual
		}
	}
	cur.UpdatedAt = now()
	return copyEndpoint(cur), nil
}

// DisableEndpoint disables any endpoint for reason.
func (s *Store) DisableEndpoint(_ context.Context, id, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.back.endpoints[id]
	if !ok {
		return fmt.Errorf("disable endpoint %s: %w", id, ordersync.ErrNotFound)
	}
	cur.Disabled, cur.DisabledReason, cur.UpdatedAt = true, reason, now()
	return nil
}

// DeleteEndpoint deletes an endpoint made at run time.
func (s *Store) DeleteEndpoint(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.back.endpoints[id]
	switch {
	case !ok:
		return fmt.Errorf("delete endpoint %s: %w", id, ordersync.ErrNotFound)
	case cur.Source == ordersync.EndpointFromConfig:
		return fmt.Errorf("delete endpoint %s: %w", id, ordersync.ErrManagedByConfig)
	}
	delete(s.back.endpoints, id)
	return nil
}

// RotateEndpointSecret makes secret current and keeps the old one until
// now+grace.
func (s *Store) RotateEndpointSecret(_ context.Context, id, secret string, grace time.Duration) (*ordersync.Endpoint, error) {
	op := fmt.Sprintf("rotate secret of endpoint %s", id)
	if secret == "" {
		return nil, fmt.Errorf("%s: %w: secret is required", op, ordersync.ErrInvalidEndpoint)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.back.endpoints[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: %w", op, ordersync.ErrNotFound)
	case cur.Source == ordersync.EndpointFromConfig:
		return nil, fmt.Errorf("%s: %w", op, ordersync.ErrManagedByConfig)
	}
	rotate(cur, secret, grace)
	return copyEndpoint(cur), nil
}

func rotate(cur *ordersync.Endpoint, secret string, grace time.Duration) {
	at := now()
	until := at.Add(grace)
	cur.PreviousSecret, cur.PreviousSecretUntil, cur.Secret, cur.UpdatedAt = cur.Secret, &until, secret, at
}

// SyncConfigEndpoints makes the config endpoints those of params: it adds
// and updates them (a changed secret rotates with grace) and deletes the
// config endpoints params no longer name. An id of an endpoint made at run
// time is ErrConflict, and nothing changes.
func (s *Store) SyncConfigEndpoints(_ context.Context, params []ordersync.EndpointParams, grace time.Duration) error {
	for _, p := range params {
		if err := ordersync.ValidateEndpointParams(p); err != nil {
			return fmt.Errorf("sync config endpoints: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	eps := s.endpointsLocked()
	for _, p := range params {
		if cur, ok := eps[p.ID]; ok && cur.Source != ordersync.EndpointFromConfig {
			return fmt.Errorf("sync %d config endpoints: endpoint %s: %w: the id belongs to an endpoint created at run time", len(params), p.ID, ordersync.ErrConflict)
		}
	}
	keep := map[string]bool{}
	at := now()
	for _, p := range params {
		keep[p.ID] = true
		cur, ok := eps[p.ID]
		if !ok {
			eps[p.ID] = newEndpoint(p, ordersync.EndpointFromConfig, at)
			continue
		}
		if cur.Secret != p.Secret {
			rotate(cur, p.Secret, grace)
		}
		cur.URL, cur.Events, cur.Description, cur.RatePerSecond, cur.UpdatedAt = p.URL, slices.Clone(p.Events), p.Description, p.RatePerSecond, at
	}
	for id, e := range eps {
		if e.Source == ordersync.EndpointFromConfig && !keep[id] {
			delete(eps, id)
		}
	}
	return nil
}

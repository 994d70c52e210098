package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

var bothEvents = []ordersync.HookEvent{ordersync.HookOrderPaid, ordersync.HookOrderStatusChanged}

// testEndpoints: an endpoint made at run time is created as given, listed
// by id, updated field by field, disabled by hand or for a reason, its
// secret rotated with a grace, and deleted; invalid parameters, a taken id
// and an unknown one are refused with the domain's errors.
func testEndpoints(t *testing.T, s Store) {
	ctx := context.Background()
	if _, err := s.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "crm", URL: "ftp://x", Events: bothEvents, Secret: "s"}); !errors.Is(err, ordersync.ErrInvalidEndpoint) {
		t.Errorf("an ftp URL: %v, want ErrInvalidEndpoint", err)
	}
	if _, err := s.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "crm", URL: "https://crm.example/hooks", Events: bothEvents}); !errors.Is(err, ordersync.ErrInvalidEndpoint) {
		t.Errorf("no secret: %v, want ErrInvalidEndpoint", err)
	}
	p := ordersync.EndpointParams{ID: "crm", URL: "https://crm.example/hooks", Events: []ordersync.HookEvent{ordersync.HookOrderPaid},
		Description: "the CRM", Secret: "whsec_one", RatePerSecond: 5}
	before := time.Now().Add(-time.Second)
	ep, err := s.CreateEndpoint(ctx, p)
	if err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
	if ep.ID != "crm" || ep.URL != p.URL || !slices.Equal(ep.Events, p.Events) || ep.Description != p.Description ||
		ep.Source != ordersync.EndpointFromAPI || ep.Disabled || ep.Secret != "whsec_one" || ep.PreviousSecret != "" ||
		ep.RatePerSecond != 5 || ep.CreatedAt.Before(before) || !ep.UpdatedAt.Equal(ep.CreatedAt) {
		t.Errorf("CreateEndpoint = %+v", ep)
	}
	if _, err := s.CreateEndpoint(ctx, p); !errors.Is(err, ordersync.ErrConflict) {
		t.Errorf("the same id again: %v, want ErrConflict", err)
	}
	gen, err := s.CreateEndpoint(ctx, ordersync.EndpointParams{URL: "https://erp.example/in", Events: bothEvents, Secret: "whsec_erp"})
	if err != nil || gen.ID == "" {
		t.Fatalf("CreateEndpoint without an id = %+v, %v; want one made up", gen, err)
	}
	list, err := s.ListEndpoints(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "crm" || list[1].ID != gen.ID {
		t.Errorf("ListEndpoints = %v, %v; want crm then %s", list, err, gen.ID)
	}

	url, desc, off := "https://crm.example/v2", "", true
	up, err := s.UpdateEndpoint(ctx, "crm", ordersync.EndpointUpdate{URL: &url, Events: bothEvents, Description: &desc, Disabled: &off})
	if err != nil || up.URL != url || !slices.Equal(up.Events, bothEvents) || up.Description != "" || !up.Disabled ||
		up.DisabledReason != ordersync.DisabledManual || up.RatePerSecond != 5 {
		t.Errorf("UpdateEndpoint = %+v, %v; want the new URL and events, no description, disabled by hand, the rate kept", up, err)
	}
	if got, err := s.FindEndpoint(ctx, "crm"); err != nil || got.URL != url || !got.Disabled {
		t.Errorf("FindEndpoint after the update = %+v, %v", got, err)
	}
	on := false
	if up, err := s.UpdateEndpoint(ctx, "crm", ordersync.EndpointUpdate{Disabled: &on}); err != nil || up.Disabled || up.DisabledReason != "" {
		t.Errorf("enabled again: %+v, %v", up, err)
	}
	bad := "not a url"
	if _, err := s.UpdateEndpoint(ctx, "crm", ordersync.EndpointUpdate{URL: &bad}); !errors.Is(err, ordersync.ErrInvalidEndpoint) {
		t.Errorf("an invalid URL: %v, want ErrInvalidEndpoint", err)
	}
	if err := s.DisableEndpoint(ctx, "crm", ordersync.DisabledGone); err != nil {
		t.Fatalf("DisableEndpoint: %v", err)
	}
	if got, err := s.FindEndpoint(ctx, "crm"); err != nil || !got.Disabled || got.DisabledReason != ordersync.DisabledGone {
		t.Errorf("after a 410: %+v, %v; want disabled as gone", got, err)
	}

	rotated, err := s.RotateEndpointSecret(ctx, "crm", "whsec_two", time.Hour)
	if err != nil || rotated.Secret != "whsec_two" || rotated.PreviousSecret != "whsec_one" || rotated.PreviousSecretUntil == nil {
		t.Fatalf("RotateEndpointSecret = %+v, %v; want the new secret current and the old one kept", rotated, err)
	}
	if got, err := s.FindEndpoint(ctx, "crm"); err != nil || !slices.Equal(got.SigningSecrets(time.Now()), []string{"whsec_two", "whsec_one"}) ||
		!slices.Equal(got.SigningSecrets(got.PreviousSecretUntil.Add(time.Second)), []string{"whsec_two"}) {
		t.Errorf("signing secrets after a rotation: %+v, %v; want both within the grace, the new one after", got, err)
	}

	if err := s.DeleteEndpoint(ctx, "crm"); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	for name, err := range map[string]error{
		"find":    errOf(s.FindEndpoint(ctx, "crm")),
		"update":  errOf(s.UpdateEndpoint(ctx, "crm", ordersync.EndpointUpdate{Disabled: &off})),
		"disable": s.DisableEndpoint(ctx, "crm", ordersync.DisabledGone),
		"rotate":  errOf(s.RotateEndpointSecret(ctx, "crm", "whsec_three", 0)),
		"delete":  s.DeleteEndpoint(ctx, "crm"),
	} {
		if !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("%s a deleted endpoint: %v, want ErrNotFound", name, err)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

// testConfigEndpoints: the file's endpoints are synced in (a changed
// secret rotates), only Disabled changes through the API, they are not
// deleted through it, and one the file no longer names is deleted; an id
// of an endpoint made at run time is refused.
func testConfigEndpoints(t *testing.T, s Store) {
	ctx := context.Background()
	a := ordersync.EndpointParams{ID: "wms", URL: "https://wms.example/in", Events: bothEvents, Secret: "whsec_a"}
	b := ordersync.EndpointParams{ID: "mail", URL: "https://mail.example/in", Events: []ordersync.HookEvent{ordersync.HookOrderPaid}, Secret: "whsec_b"}
	if err := s.SyncConfigEndpoints(ctx, []ordersync.EndpointParams{a, b}, time.Hour); err != nil {
		t.Fatalf("SyncConfigEndpoints: %v", err)
	}
	ep, err := s.FindEndpoint(ctx, "wms")
	if err != nil || ep.Source != ordersync.EndpointFromConfig || ep.URL != a.URL || ep.Secret != "whsec_a" {
		t.Fatalf("a config endpoint: %+v, %v", ep, err)
	}
	url := "https://elsewhere.example"
	if _, err := s.UpdateEndpoint(ctx, "wms", ordersync.EndpointUpdate{URL: &url}); !errors.Is(err, ordersync.ErrManagedByConfig) {
		t.Errorf("a config endpoint's URL through the API: %v, want ErrManagedByConfig", err)
	}
	off := true
	if up, err := s.UpdateEndpoint(ctx, "wms", ordersync.EndpointUpdate{Disabled: &off}); err != nil || !up.Disabled {
		t.Errorf("disabling a config endpoint: %+v, %v", up, err)
	}
	if err := s.DeleteEndpoint(ctx, "wms"); !errors.Is(err, ordersync.ErrManagedByConfig) {
		t.Errorf("deleting a config endpoint: %v, want ErrManagedByConfig", err)
	}
	if _, err := s.RotateEndpointSecret(ctx, "wms", "x", 0); !errors.Is(err, ordersync.ErrManagedByConfig) {
		t.Errorf("rotating a config endpoint's secret: %v, want ErrManagedByConfig", err)
	}

	a.Secret, a.URL = "whsec_a2", "https://wms.example/v2"
	if err := s.SyncConfigEndpoints(ctx, []ordersync.EndpointParams{a}, time.Hour); err != nil {
		t.Fatalf("SyncConfigEndpoints again: %v", err)
	}
	ep, err = s.FindEndpoint(ctx, "wms")
	if err != nil || ep.URL != a.URL || ep.Secret != "whsec_a2" || ep.PreviousSecret != "whsec_a" || ep.PreviousSecretUntil == nil || !ep.Disabled {
		t.Errorf("after the file changed: %+v, %v; want the new URL, the secret rotated, still disabled", ep, err)
	}
	if _, err := s.FindEndpoint(ctx, "mail"); !errors.Is(err, ordersync.ErrNotFound) {
		t.Errorf("an endpoint the file no longer names: %v, want ErrNotFound", err)
	}

	if _, err := s.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "crm", URL: "https://crm.example", Events: bothEvents, Secret: "s"}); err != nil {
		t.Fatal(err)
	}
	c := ordersync.EndpointParams{ID: "crm", URL: "https://crm.example", Events: bothEvents, Secret: "s"}
	if err := s.SyncConfigEndpoints(ctx, []ordersync.EndpointParams{a, c}, time.Hour); !errors.Is(err, ordersync.ErrConflict) {
		t.Errorf("a file naming a run-time endpoint's id: %v, want ErrConflict", err)
	}
	if ep, err := s.FindEndpoint(ctx, "crm"); err != nil || ep.Source != ordersync.EndpointFromAPI {
		t.Errorf("the run-time endpoint after the refused sync: %+v, %v", ep, err)
	}
}

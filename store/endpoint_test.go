package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
)

func TestEndpointsCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		paid := []ordersync.HookEvent{ordersync.HookOrderPaid}
		ep, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{URL: "https://erp.example.com/hook", Events: paid, Description: "ERP", Secret: secretA})
		if err != nil {
			t.Fatalf("CreateEndpoint: %v", err)
		}
		if !strings.HasPrefix(ep.ID, "ep_") || ep.Source != ordersync.EndpointFromAPI || ep.Disabled || !slices.Equal(ep.Events, paid) || ep.Secret != secretA {
			t.Fatalf("created %+v", ep)
		}
		for name, p := range map[string]ordersync.EndpointParams{
			"bad url":      {URL: "ftp://x", Events: paid, Secret: secretA},
			"no events":    {URL: "https://x.example", Secret: secretA},
			"unknown":      {URL: "https://x.example", Events: []ordersync.HookEvent{"order.created"}, Secret: secretA},
			"twice":        {URL: "https://x.example", Events: []ordersync.HookEvent{"order.paid", "order.paid"}, Secret: secretA},
			"no secret":    {URL: "https://x.example", Events: paid},
			"bad id chars": {ID: "a.b", URL: "https://x.example", Events: paid, Secret: secretA},
			"bad rate":     {URL: "https://x.example", Events: paid, Secret: secretA, RatePerSecond: -1},
		} {
			if _, err := db.CreateEndpoint(ctx, p); !errors.Is(err, ordersync.ErrInvalidEndpoint) {
				t.Errorf("%s: CreateEndpoint = %v, want ErrInvalidEndpoint", name, err)
			}
		}
		if _, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{ID: ep.ID, URL: "https://x.example", Events: paid, Secret: secretA}); !errors.Is(err, ordersync.ErrConflict) {
			t.Errorf("CreateEndpoint with a taken id = %v, want ErrConflict", err)
		}

		newURL, desc, off, rps := "https://erp.example.com/v2", "ERP v2", true, 2.5
		both := []ordersync.HookEvent{ordersync.HookOrderStatusChanged, ordersync.HookOrderPaid}
		up, err := db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{URL: &newURL, Events: both, Description: &desc, Disabled: &off, RatePerSecond: &rps})
		if err != nil {
			t.Fatalf("UpdateEndpoint: %v", err)
		}
		got, err := db.FindEndpoint(ctx, ep.ID)
		if err != nil {
			t.Fatalf("FindEndpoint: %v", err)
		}
		if got.URL != newURL || !slices.Equal(got.Events, both) || got.Description != desc || !got.Disabled || got.RatePerSecond != rps || got.DisabledReason != ordersync.DisabledManual || !got.UpdatedAt.Equal(up.UpdatedAt) {
			t.Errorf("after update %+v", got)
		}
		on := false
		if got, err = db.UpdateEndpoint(ctx, ep.ID, ordersync.EndpointUpdate{Disabled: &on}); err != nil || got.Disabled || got.DisabledReason != "" {
			t.Errorf("enable: %+v, %v", got, err)
		}
		if err := db.DisableEndpoint(ctx, ep.ID, ordersync.DisabledGone); err != nil {
			t.Fatalf("DisableEndpoint: %v", err)
		}
		if got, _ = db.FindEndpoint(ctx, ep.ID); !got.Disabled || got.DisabledReason != ordersync.DisabledGone {
			t.Errorf("after a 410: %+v", got)
		}
		if _, err := db.UpdateEndpoint(ctx, "ep_missing", ordersync.EndpointUpdate{Disabled: &on}); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("UpdateEndpoint of a missing one = %v, want ErrNotFound", err)
		}

		other, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{ID: "wms", URL: "http://127.0.0.1:9/hook", Events: both, Secret: secretB})
		if err != nil {
			t.Fatal(err)
		}
		list, err := db.ListEndpoints(ctx)
		if err != nil || len(list) != 2 || list[0].ID != ep.ID || list[1].ID != other.ID {
			t.Fatalf("ListEndpoints = %v, %v", list, err)
		}
		if err := db.DeleteEndpoint(ctx, ep.ID); err != nil {
			t.Fatalf("DeleteEndpoint: %v", err)
		}
		if _, err := db.FindEndpoint(ctx, ep.ID); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("FindEndpoint after delete = %v, want ErrNotFound", err)
		}
		if err := db.DeleteEndpoint(ctx, ep.ID); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("DeleteEndpoint twice = %v, want ErrNotFound", err)
		}
	})
}

func TestRotateEndpointSecret(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		ep, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{URL: "https://x.example", Events: []ordersync.HookEvent{ordersync.HookOrderPaid}, Secret: secretA})
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		if _, err := db.RotateEndpointSecret(ctx, ep.ID, secretB, time.Hour); err != nil {
			t.Fatalf("RotateEndpointSecret: %v", err)
		}
		got, err := db.FindEndpoint(ctx, ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Secret != secretB || got.PreviousSecret != secretA || got.PreviousSecretUntil == nil || got.PreviousSecretUntil.Before(before.Add(time.Hour-time.Second)) {
			t.Fatalf("after rotation %+v", got)
		}
		if s := got.SigningSecrets(time.Now()); !slices.Equal(s, []string{secretB, secretA}) {
			t.Errorf("signing secrets in the grace period = %v", s)
		}
		if s := got.SigningSecrets(time.Now().Add(time.Hour + time.Second)); !slices.Equal(s, []string{secretB}) {
			t.Errorf("signing secrets after the grace period = %v", s)
		}
		if _, err := db.RotateEndpointSecret(ctx, "nope", secretB, time.Hour); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("rotate a missing endpoint = %v", err)
		}
	})
}

func TestSyncConfigEndpoints(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		paid := []ordersync.HookEvent{ordersync.HookOrderPaid}
		api, err := db.CreateEndpoint(ctx, ordersync.EndpointParams{URL: "https://api.example", Events: paid, Secret: secretA})
		if err != nil {
			t.Fatal(err)
		}
		file := []ordersync.EndpointParams{
			{ID: "erp", URL: "https://erp.example/hook", Events: paid, Secret: secretA},
			{ID: "wms", URL: "https://wms.example/hook", Events: paid, Secret: secretA},
		}
		if err := db.SyncConfigEndpoints(ctx, file, time.Hour); err != nil {
			t.Fatalf("SyncConfigEndpoints: %v", err)
		}
		if err := db.DisableEndpoint(ctx, "wms", ordersync.DisabledGone); err != nil {
			t.Fatal(err)
		}
		// The next start: erp changed its URL and secret, wms is gone.
		file = []ordersync.EndpointParams{{ID: "erp", URL: "https://erp.example/v2", Events: paid, Secret: secretB, Description: "ERP"}}
		if err := db.SyncConfigEndpoints(ctx, file, time.Hour); err != nil {
			t.Fatalf("SyncConfigEndpoints again: %v", err)
		}
		list, err := db.ListEndpoints(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, e := range list {
			ids = append(ids, e.ID)
		}
		if !slices.Equal(ids, []string{api.ID, "erp"}) {
			t.Fatalf("endpoints after the second sync: %v", ids)
		}
		erp := list[1]
		if erp.Source != ordersync.EndpointFromConfig || erp.URL != "https://erp.example/v2" || erp.Description != "ERP" ||
			!slices.Equal(erp.SigningSecrets(time.Now()), []string{secretB, secretA}) {
			t.Errorf("erp after the second sync: %+v", erp)
		}
		// The file owns a config endpoint's fields; its disabled flag is the
		// operator's.
		u := "https://elsewhere.example"
		if _, err := db.UpdateEndpoint(ctx, "erp", ordersync.EndpointUpdate{URL: &u}); !errors.Is(err, ordersync.ErrManagedByConfig) {
			t.Errorf("UpdateEndpoint URL of a config endpoint = %v, want ErrManagedByConfig", err)
		}
		off := true
		if _, err := db.UpdateEndpoint(ctx, "erp", ordersync.EndpointUpdate{Disabled: &off}); err != nil {
			t.Errorf("disable a config endpoint: %v", err)
		}
		if err := db.SyncConfigEndpoints(ctx, file, time.Hour); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.FindEndpoint(ctx, "erp"); !got.Disabled {
			t.Error("a restart enabled a disabled config endpoint")
		}
		if err := db.DeleteEndpoint(ctx, "erp"); !errors.Is(err, ordersync.ErrManagedByConfig) {
			t.Errorf("DeleteEndpoint of a config endpoint = %v, want ErrManagedByConfig", err)
		}
		if _, err := db.RotateEndpointSecret(ctx, "erp", secretA, time.Hour); !errors.Is(err, ordersync.ErrManagedByConfig) {
			t.Errorf("RotateEndpointSecret of a config endpoint = %v, want ErrManagedByConfig", err)
		}
		clash := []ordersync.EndpointParams{{ID: api.ID, URL: "https://x.example", Events: paid, Secret: secretA}}
		if err := db.SyncConfigEndpoints(ctx, clash, time.Hour); !errors.Is(err, ordersync.ErrConflict) {
			t.Errorf("config id taken by an API endpoint = %v, want ErrConflict", err)
		}
	})
}

func TestDeliveryDeadLetters(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		dl := ordersync.DeliveryDeadLetter{
			EndpointID: "erp", Event: ordersync.HookOrderPaid, WebhookID: "msg_1", Account: "default", OrderCode: "yY7Mcnd",
			Attempts: 1, LastStatus: 422, LastBody: strings.Repeat("x", 3000), Body: []byte(`{"type":"order.paid"}`),
		}
		id, err := db.AddDeliveryDeadLetter(ctx, dl)
		if err != nil {
			t.Fatalf("AddDeliveryDeadLetter: %v", err)
		}
		dl.Attempts = 2
		if again, err := db.AddDeliveryDeadLetter(ctx, dl); err != nil || again != id {
			t.Fatalf("the same delivery again = %d, %v; want %d", again, err, id)
		}
		other := dl
		other.EndpointID, other.WebhookID = "wms", "msg_2"
		if _, err := db.AddDeliveryDeadLetter(ctx, other); err != nil {
			t.Fatal(err)
		}
		got, err := db.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{EndpointID: "erp"})
		if err != nil || len(got) != 1 {
			t.Fatalf("list = %v, %v", got, err)
		}
		if g := got[0]; g.ID != id || g.Attempts != 2 || g.LastStatus != 422 || len(g.LastBody) != 1024 || string(g.Body) != `{"type":"order.paid"}` || g.OrderCode != "yY7Mcnd" {
			t.Errorf("letter %+v", g)
		}
		if err := db.MarkDeliveryDeadLetterReplayed(ctx, id, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{EndpointID: "erp"}); len(got) != 0 {
			t.Errorf("a replayed letter is still listed: %v", got)
		}
		f, err := db.FindDeliveryDeadLetter(ctx, id)
		if err != nil || f.ReplayCount != 1 || f.ReplayedAt == nil {
			t.Errorf("FindDeliveryDeadLetter = %+v, %v", f, err)
		}
		// Failing again after a replay is a new letter.
		if again, err := db.AddDeliveryDeadLetter(ctx, dl); err != nil || again == id {
			t.Errorf("after a replay = %d, %v; want a new letter", again, err)
		}
		if all, _ := db.ListDeliveryDeadLetters(ctx, ordersync.DeliveryDeadLetterFilter{IncludeReplayed: true}); len(all) != 3 {
			t.Errorf("all letters: %d, want 3", len(all))
		}
		if err := db.MarkDeliveryDeadLetterReplayed(ctx, 9999, time.Now()); !errors.Is(err, ordersync.ErrNotFound) {
			t.Errorf("replay a missing letter = %v", err)
		}
	})
}

// Each outbox message says which status the change left.
func TestOutboxFromStatus(t *testing.T) {
	eachDialect(t, func(t *testing.T, url string) {
		db := openDB(t, url)
		ctx := context.Background()
		apply(t, db, fetched(orderDoc(t, "F1", 1, ordersync.StatusPending), 1))
		apply(t, db, fetched(orderDoc(t, "F1", 1, ordersync.StatusPaid), 2))
		msgs, err := db.PendingOutbox(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.Subject+" from "+string(m.From))
		}
		want := []string{
			ordersync.SubjectStatusPrefix + "PENDING from ",
			ordersync.SubjectStatusPrefix + "PAID from PENDING",
			ordersync.SubjectPaid + " from PENDING",
		}
		if !slices.Equal(got, want) {
			t.Errorf("outbox %q, want %q", got, want)
		}
	})
}

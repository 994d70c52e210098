package ordersync

import (
	"errors"
	"math"
	"testing"
)

func TestHookEventOf(t *testing.T) {
	for subject, want := range map[string]HookEvent{
		SubjectPaid:                       HookOrderPaid,
		SubjectStatusPrefix + "PAID":      HookOrderStatusChanged,
		SubjectStatusPrefix + "FINALIZED": HookOrderStatusChanged,
		SubjectStatusPrefix:               "",
		"ordersync.orders.other":          "",
	} {
		got, ok := HookEventOf(subject)
		if got != want || ok != (want != "") {
			t.Errorf("HookEventOf(%q) = %q, %v; want %q", subject, got, ok, want)
		}
	}
}

func TestValidateEndpoint(t *testing.T) {
	for _, bad := range []string{"", "example.com/hook", "ftp://example.com", "https://", "http://[::1"} {
		if err := ValidateEndpointURL(bad); !errors.Is(err, ErrInvalidEndpoint) {
			t.Errorf("ValidateEndpointURL(%q) = %v", bad, err)
		}
	}
	if err := ValidateEndpointURL("http://127.0.0.1:8080/hook"); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]HookEvent{nil, {"order.created"}, {HookOrderPaid, HookOrderPaid}} {
		if err := ValidateHookEvents(bad); !errors.Is(err, ErrInvalidEndpoint) {
			t.Errorf("ValidateHookEvents(%v) = %v", bad, err)
		}
	}
	if err := ValidateHookEvents([]HookEvent{HookOrderStatusChanged, HookOrderPaid}); err != nil {
		t.Error(err)
	}
}

func TestValidateEndpointParams(t *testing.T) {
	good := EndpointParams{ID: "crm", URL: "https://crm.example/hooks", Events: []HookEvent{HookOrderPaid}, Secret: "s", RatePerSecond: 2}
	if err := ValidateEndpointParams(good); err != nil {
		t.Fatal(err)
	}
	nan, negative, bad := math.NaN(), -1.0, "ftp://x"
	for name, change := range map[string]func(*EndpointParams){
		"id with a dot":   func(p *EndpointParams) { p.ID = "crm.1" },
		"an ftp URL":      func(p *EndpointParams) { p.URL = bad },
		"no events":       func(p *EndpointParams) { p.Events = nil },
		"no secret":       func(p *EndpointParams) { p.Secret = "" },
		"a negative rate": func(p *EndpointParams) { p.RatePerSecond = negative },
		"a NaN rate":      func(p *EndpointParams) { p.RatePerSecond = nan },
	} {
		p := good
		change(&p)
		if err := ValidateEndpointParams(p); !errors.Is(err, ErrInvalidEndpoint) {
			t.Errorf("%s: ValidateEndpointParams = %v, want ErrInvalidEndpoint", name, err)
		}
	}
	if err := ValidateEndpointUpdate(EndpointUpdate{}); err != nil {
		t.Errorf("an empty update: %v", err)
	}
	for name, u := range map[string]EndpointUpdate{
		"an ftp URL":      {URL: &bad},
		"no events":       {Events: []HookEvent{}},
		"a negative rate": {RatePerSecond: &negative},
		"a NaN rate":      {RatePerSecond: &nan},
	} {
		if err := ValidateEndpointUpdate(u); !errors.Is(err, ErrInvalidEndpoint) {
			t.Errorf("%s: ValidateEndpointUpdate = %v, want ErrInvalidEndpoint", name, err)
		}
	}
}

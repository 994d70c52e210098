package ordersync

import (
	"errors"
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

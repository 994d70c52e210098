package ordersync

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseEventFixtures(t *testing.T) {
	tests := []struct {
		file      string
		typ       EventType
		orderID   ID
		reference string
		orderType string
		ignored   IgnoreReason // "" when followed
	}{
		{"webhook-cancelled.json", EventCancelled, "31551", "ped_a1e73c08", OrderTypePaymentLink, ""},
		{"webhook-created-captured-shape.json", EventCreated, "31547", "ped_7f3c2a91", OrderTypePaymentLink, ""},
		{"webhook-other-product-coupon-app.json", EventSuccessPayment, "31560", "", "COUPON_APP", IgnoreOtherProduct},
		{"webhook-successpayment-rich-metadata.json", EventSuccessPayment, "31548", "ped_91b0e4d2", OrderTypePaymentLink, ""},
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "webhooks"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(tests) {
		t.Errorf("%d fixtures in testdata/webhooks, %d expected: every fixture needs a case", len(entries), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ev, err := ParseEvent(readTestdata(t, filepath.Join("webhooks", tt.file)))
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if ev.Type != tt.typ || ev.OrderID != tt.orderID || ev.OrderReference != tt.reference || ev.OrderType != tt.orderType {
				t.Errorf("event = %+v", ev)
			}
			if ev.OrderCode != "" {
				t.Errorf("orderCode %q: none is sent by real deployments", ev.OrderCode)
			}
			reason, ignored := ev.Ignored()
			if reason != tt.ignored || ignored != (tt.ignored != "") {
				t.Errorf("Ignored() = %q, %v, want %q", reason, ignored, tt.ignored)
			}
			ref := ev.Ref(DefaultAccount)
			if ref.Account != DefaultAccount || ref.ID != tt.orderID || ref.Reference != tt.reference {
				t.Errorf("Ref = %+v", ref)
			}
		})
	}
}

func TestParseEventVariants(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		malformed bool
		check     func(t *testing.T, ev *Event)
	}{
		{name: "orderId as number", body: `{"orderId":22805,"type":"Created","orderType":"FASTLINK_CHARGE"}`, check: func(t *testing.T, ev *Event) {
			if ev.OrderID != "22805" {
				t.Errorf("orderId = %q", ev.OrderID)
			}
		}},
		{name: "orderCode when present", body: `{"orderCode":" yY7Mcnd ","type":"Updated"}`, check: func(t *testing.T, ev *Event) {
			if ev.OrderCode != "yY7Mcnd" {
				t.Errorf("orderCode = %q", ev.OrderCode)
			}
			if _, ignored := ev.Ignored(); ignored {
				t.Error("an event with a code but no orderType must be followed")
			}
		}},
		{name: "metadata a string", body: `{"orderId":"1","metadata":"PaymentId=1","type":"SuccessPayment"}`, check: orderOne},
		{name: "metadata a list", body: `{"orderId":"1","metadata":[{"name":"a","value":"b"}],"type":"SuccessPayment"}`, check: orderOne},
		{name: "metadata null", body: `{"orderId":"1","metadata":null}`, check: orderOne},
		// Fields ParseEvent does not read fail nothing, whatever they hold.
		{name: "description and level of any kind", body: `{"orderId":"1","description":{"es":"x"},"level":3}`, check: orderOne},
		{name: "unknown fields ignored", body: `{"orderId":"1","type":"Requires3ds","newField":{"x":[1]},"level":"Warning"}`, check: func(t *testing.T, ev *Event) {
			if ev.Type != EventRequires3ds || ev.OrderID != "1" {
				t.Errorf("event = %+v", ev)
			}
		}},
		{name: "leading white space", body: "\n\t {\"orderId\":\"1\"}", check: func(t *testing.T, ev *Event) {
			if ev.OrderID != "1" {
				t.Errorf("orderId = %q", ev.OrderID)
			}
		}},
		{name: "empty", body: ``, malformed: true},
		{name: "null", body: `null`, malformed: true},
		{name: "array", body: `[{"orderId":"1"}]`, malformed: true},
		{name: "string", body: `"Created"`, malformed: true},
		{name: "form encoded", body: `orderId=1&type=Created`, malformed: true},
		{name: "truncated", body: `{"orderId":"1",`, malformed: true},
		{name: "orderId an object", body: `{"orderId":{"id":1}}`, malformed: true},
		{name: "type a number", body: `{"orderId":"1","type":3}`, malformed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := ParseEvent([]byte(tt.body))
			if tt.malformed {
				if !errors.Is(err, ErrMalformedEvent) {
					t.Fatalf("err = %v, want ErrMalformedEvent", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			tt.check(t, ev)
		})
	}
}

func orderOne(t *testing.T, ev *Event) {
	t.Helper()
	if ev.OrderID != "1" {
		t.Errorf("orderId = %q, want 1", ev.OrderID)
	}
}

func TestEventIgnored(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want IgnoreReason
	}{
		{"payment link", Event{OrderID: "1", OrderType: OrderTypePaymentLink, Type: EventCreated}, ""},
		{"payment link, other case", Event{OrderID: "1", OrderType: "fastlink_charge", Type: EventCreated}, ""},
		{"no orderType", Event{OrderID: "1", Type: EventCreated}, ""},
		{"reference only", Event{OrderReference: "ped_1", Type: EventCreated}, ""},
		{"other product", Event{OrderID: "1", OrderType: "COUPON_APP", Type: EventSuccessPayment}, IgnoreOtherProduct},
		{"subscription payment", Event{SubscriptionID: "77", Type: EventSubscriptionPayment}, IgnoreSubscription},
		{"subscription confirmation", Event{SubscriptionID: "77", Type: EventSubscriptionConfirmation}, IgnoreSubscription},
		{"subscription cancelled", Event{SubscriptionID: "77", Type: EventSubscriptionCancelled}, IgnoreSubscription},
		{"no identity", Event{OrderType: OrderTypePaymentLink, Type: EventCreated}, IgnoreNoIdentity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, ignored := tt.ev.Ignored()
			if reason != tt.want || ignored != (tt.want != "") {
				t.Errorf("Ignored() = %q, %v, want %q", reason, ignored, tt.want)
			}
		})
	}
}

func TestEventTypeImpliedStatus(t *testing.T) {
	implied := map[EventType]Status{
		EventSuccessPayment: StatusPaid,
		EventCancelled:      StatusCancelled,
		EventSuccessReverse: StatusCancelled,
		EventFinalized:      StatusFinalized,
	}
	all := []EventType{
		EventCreated, EventUpdated, EventSuccessPayment, EventPaymentError, EventCancelled, EventFinalized,
		EventSuccessReverse, EventReverseError, EventRequires3ds, EventThreeDSecureAuthSucceeded,
		EventThreeDSecureAuthFailed, EventThreeDSecureAuthError, EventThreeDSecureAuthExpired,
		EventSubscriptionConfirmation, EventSubscriptionPayment, EventSubscriptionCancelled,
	}
	for _, typ := range all {
		st, ok := typ.ImpliedStatus()
		want, wantOK := implied[typ]
		if st != want || ok != wantOK {
			t.Errorf("%s.ImpliedStatus() = %q, %v, want %q, %v", typ, st, ok, want, wantOK)
		}
		if sub := typ == EventSubscriptionConfirmation || typ == EventSubscriptionPayment || typ == EventSubscriptionCancelled; typ.IsSubscription() != sub {
			t.Errorf("%s.IsSubscription() = %v", typ, !sub)
		}
	}
}

// FuzzParseEvent: any body either fails with ErrMalformedEvent or gives an
// event whose Ignored and Ref answer without panicking.
func FuzzParseEvent(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "webhooks"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readTestdata(f, filepath.Join("webhooks", e.Name())))
	}
	for _, s := range []string{``, `null`, `{"orderId":22805}`, `{"metadata":[1]}`, `{"type":"SubscriptionPayment","subscriptionId":9}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := ParseEvent(body)
		if err != nil {
			if !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("error %v is not ErrMalformedEvent", err)
			}
			return
		}
		reason, ignored := ev.Ignored()
		if ignored == (reason == "") {
			t.Fatalf("Ignored() = %q, %v", reason, ignored)
		}
		if !ignored && ev.OrderID == "" && ev.OrderCode == "" && ev.OrderReference == "" {
			t.Fatal("an event without keys is followed")
		}
		_ = ev.Ref(DefaultAccount)
	})
}

// BenchmarkParseEvent parses the richest real-world webhook body, as the
// receiver does for every webhook and the worker for every event.
func BenchmarkParseEvent(b *testing.B) {
	body := readTestdata(b, filepath.Join("webhooks", "webhook-successpayment-rich-metadata.json"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEvent(body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEventEnvelope: an event's envelope reads back as the same event, and
// an event one line cannot carry has none (its reader parses the body).
func TestEventEnvelope(t *testing.T) {
	for _, e := range []Event{
		{Type: EventCreated, OrderType: OrderTypePaymentLink, OrderID: "22805", OrderReference: "pedido 7/á"},
		{Type: EventSuccessPayment, OrderCode: "yY7Mcnd"},
		{Type: "SubscriptionPayment", SubscriptionID: "991"},
		{},
	} {
		line, ok := e.Envelope()
		if !ok {
			t.Errorf("%+v: no envelope", e)
			continue
		}
		got, ok := ParseEnvelope(line)
		if !ok || *got != e {
			t.Errorf("%+v: envelope %q reads back as %+v (%v)", e, line, got, ok)
		}
	}
	for _, e := range []Event{
		{OrderReference: "a|b"},
		{OrderReference: "line\nbreak"},
		{Type: " Created"},
		{SubscriptionID: "9 "},
	} {
		if line, ok := e.Envelope(); ok {
			t.Errorf("%+v: envelope %q, want none", e, line)
		}
	}
	for _, line := range []string{"", "Created|x", "a|b|c|d|e|f|g"} {
		if e, ok := ParseEnvelope(line); ok {
			t.Errorf("ParseEnvelope(%q) = %+v, want not ok", line, e)
		}
	}
}

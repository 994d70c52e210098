package ordersync

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidateDeliveryDeadLetter(t *testing.T) {
	good := DeliveryDeadLetter{EndpointID: "crm", WebhookID: "msg_1", Event: HookOrderPaid}
	if err := ValidateDeliveryDeadLetter(good); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*DeliveryDeadLetter){
		"EndpointID": func(dl *DeliveryDeadLetter) { dl.EndpointID = "" },
		"WebhookID":  func(dl *DeliveryDeadLetter) { dl.WebhookID = "" },
		"Event":      func(dl *DeliveryDeadLetter) { dl.Event = "" },
	} {
		dl := good
		change(&dl)
		if err := ValidateDeliveryDeadLetter(dl); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v, want an error naming it", name, err)
		}
	}
}

func TestDeliveryDeadLetterBounded(t *testing.T) {
	// A two-byte rune straddles the cut: the body keeps only whole runes.
	dl := DeliveryDeadLetter{LastBody: strings.Repeat("a", MaxDeliveryAnswer-1) + "é" + "tail", LastError: strings.Repeat("x", 2*MaxDeliveryError)}
	got := dl.Bounded()
	if want := strings.Repeat("a", MaxDeliveryAnswer-1); got.LastBody != want {
		t.Errorf("LastBody is %d bytes, want the %d before the cut rune", len(got.LastBody), len(want))
	}
	if !utf8.ValidString(got.LastBody) {
		t.Errorf("LastBody is not valid UTF-8")
	}
	if want := strings.Repeat("x", MaxDeliveryError) + "…"; got.LastError != want {
		t.Errorf("LastError is %d bytes, want %d clipped (Clip)", len(got.LastError), len(want))
	}
	short := DeliveryDeadLetter{LastBody: "gone", LastError: "refused"}
	if b := short.Bounded(); b.LastBody != "gone" || b.LastError != "refused" {
		t.Errorf("a short answer changed: %+v", b)
	}
}

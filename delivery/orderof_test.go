package delivery_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
	"github.com/ordersync/ordersync/delivery"
)

// TestOrderOfMatchesParseOrder: the body a dispatcher builds from an
// event's headers and the store encoder's offset (OrderOf) is the body it
// builds by reading the payload (ParseOrder), byte for byte, for each
// shape of document; and the encoder gives no offset where the headers
// could not say what the payload holds.
func TestOrderOfMatchesParseOrder(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "order_payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 9, 31, 2, 123000000, time.UTC)
	cases := []struct {
		name, account, doc string
		fast               bool
	}{
		{"fixture", "acme", string(fixture), true},
		{"minimal", "default", `{"orderCode":"A1","orderStatus":"PAID"}`, true},
		{"names after statusChange", "default", `{"orderCode":"A1","orderStatus":"PAID","store":{"name":"x"},"total":1,"zz":null}`, true},
		{"nothing after statusChange", "default", `{"orderCode":"A1","orderStatus":"PAID","aa":[1,2]}`, true},
		{"spaced and escaped", "default", "{ \"orderCode\" : \"A1\", \"orderStatus\":\"PAID\", \"note\":\"<b>\u2028\", \"zeta\": [1, 2] }", true},
		{"escaped name", "default", `{"orderCode":"A1","orderStatus":"PAID","a\u00e9b":1,"t\u0026":2}`, true},
		{"status in lower case", "default", `{"orderCode":"A1","orderStatus":"paid"}`, false},
		{"escaped account", "acme & co", `{"orderCode":"A1","orderStatus":"PAID"}`, false},
		{"own statusChange", "default", `{"orderCode":"A1","orderStatus":"PAID","statusChange":{"from":"x"}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := ordersync.DecodeOrder([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			m := ordersync.MirroredOrder{Account: c.account, Order: *o, Sync: ordersync.SyncInfo{FetchSeq: 7}}
			payload, split, err := m.EncodeEvent()
			if err != nil {
				t.Fatal(err)
			}
			if want, err := m.MarshalJSON(); err != nil || !bytes.Equal(payload, want) {
				t.Fatalf("EncodeEvent's payload differs from MarshalJSON's (%v):\n%s\n%s", err, payload, want)
			}
			if (split > 0) != c.fast {
				t.Fatalf("offset %d, want one: %v", split, c.fast)
			}
			if split == 0 {
				return
			}
			fromHeaders, ok := delivery.OrderOf(m.Account, o.OrderCode, string(o.OrderStatus), payload, split)
			if !ok {
				t.Fatalf("OrderOf refused offset %d of %s", split, payload)
			}
			read, err := delivery.ParseOrder(payload)
			if err != nil {
				t.Fatal(err)
			}
			if fromHeaders.Account != read.Account || fromHeaders.Code != read.Code || fromHeaders.Status != read.Status {
				t.Errorf("headers say %s/%s %s, the payload %s/%s %s", fromHeaders.Account, fromHeaders.Code, fromHeaders.Status, read.Account, read.Code, read.Status)
			}
			for _, from := range []string{"", "PENDING"} {
				got, err := fromHeaders.EventBody(delivery.EventOrderPaid, at, from)
				if err != nil {
					t.Fatal(err)
				}
				want, err := read.EventBody(delivery.EventOrderPaid, at, from)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("from %q: body from the headers\n%s\nwant\n%s", from, got, want)
				}
			}
		})
	}
}

// TestOrderOfRefusesBadOffsets: an offset that is not the start of a
// member or the closing brace is refused, so the caller reads the payload.
func TestOrderOfRefusesBadOffsets(t *testing.T) {
	payload := []byte(`{"a":1,"b":"x"}`)
	for _, at := range []int{-1, 0, 2, 5, 6, 9, len(payload)} {
		if _, ok := delivery.OrderOf("default", "A1", "PAID", payload, at); ok {
			t.Errorf("OrderOf accepted offset %d", at)
		}
	}
	for _, at := range []int{1, 7, len(payload) - 1} {
		if _, ok := delivery.OrderOf("default", "A1", "PAID", payload, at); !ok {
			t.Errorf("OrderOf refused offset %d", at)
		}
	}
}

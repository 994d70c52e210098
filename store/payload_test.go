package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ordersync/ordersync"
)

// payloadDocs are documents encodePayload must encode exactly as
// MarshalJSON does, fast path or not.
var payloadDocs = []string{
	`{}`,
	` { "b" : [ 1 , 2 ] , "a" : { "x" : null } } `,
	`{"orderCode":"yY7Mcnd","total":6.50,"lineItems":[],"payment":null,"created":"2026-10-10T18:00:12.345Z"}`,
	`{"name":"Tom & Jerry <3>","description":"línea\u2028separada","emoji":"😀","esc":"a\"b\\c\/d\n"}`,
	"{\"raw\":\"U+2028 \xe2\x80\xa8 and U+2029 \xe2\x80\xa9 and é\"}",
	`{"account":"upstream-said","sync":{"x":1},"z":true,"y":false}`,
	`{"dup":1,"dup":2}`,
	`{"k\u00e9y":1}`,
	`{"<key>":1}`,
	`{"n":-0.5e+10,"m":0,"o":1E-2,"p":[[],[{}]]}`,
	`{"bad":01}`,
	`{"bad":1.}`,
	`{"bad":"unterminated}`,
	`{"bad":tru}`,
	`{"a":1}trailing`,
	`{"a":1,}`,
	`[1,2]`,
	"{\"ctl\":\"a\tb\"}",
}

func payloadOf(doc []byte) ordersync.MirroredOrder {
	seen := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
	paid, changed := seen.Add(1500*time.Millisecond), seen.Add(2*time.Second)
	return ordersync.MirroredOrder{
		Account: "acme & co",
		Order:   ordersync.Order{Raw: doc},
		Sync: ordersync.SyncInfo{FirstSeenAt: seen, LastSyncedAt: &seen, LastEventType: ordersync.EventCreated, FetchCount: 2, FetchSeq: 7,
			PaidAt: &paid, StatusChangedAt: &changed},
	}
}

func checkPayload(t *testing.T, doc []byte) {
	t.Helper()
	m := payloadOf(doc)
	want, wantErr := m.MarshalJSON()
	got, gotErr := encodePayload(&m)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("doc %q: encodePayload err %v, MarshalJSON err %v", doc, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("doc %q:\nencodePayload %s\n  MarshalJSON %s", doc, got, want)
	}
}

func TestEncodePayloadMatchesMarshalJSON(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "order-detail.json"))
	if err != nil {
		t.Fatal(err)
	}
	docs := [][]byte{fixture, orderDoc(t, "p", 1, ordersync.StatusPaid).Raw}
	for _, d := range payloadDocs {
		docs = append(docs, []byte(d))
	}
	// Past 32 keys duplicates are looked for in a map: unique keys, a key
	// repeated within the first 32, across them and past them.
	manyKeys := func(dup ...int) []byte {
		var b bytes.Buffer
		b.WriteString("{")
		for i := range 40 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%02d":%d`, i, i)
		}
		for _, d := range dup {
			fmt.Fprintf(&b, `,"k%02d":"again"`, d)
		}
		b.WriteString("}")
		return b.Bytes()
	}
	docs = append(docs, manyKeys(), manyKeys(3), manyKeys(35))
	for _, d := range docs {
		checkPayload(t, d)
	}
	// A document that is not an object falls back to the typed order.
	checkPayload(t, []byte(" null"))
	// The service's compact documents take the fast path.
	if fields, ok := topLevelFields(orderDoc(t, "p", 1, ordersync.StatusPaid).Raw); !ok || len(fields) == 0 {
		t.Error("a compact order document did not take the fast path")
	}
}

func FuzzEncodePayload(f *testing.F) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "order-detail.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	for _, d := range payloadDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || bytes.HasPrefix(trimmed, []byte("null")) {
			return // not this path: an empty Raw marshals the Order
		}
		checkPayload(t, doc)
	})
}

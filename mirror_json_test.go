package ordersync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// marshalByMap is the encoding MarshalJSON must match byte for byte: the
// document decoded into a map, "account" and "sync" added, the map
// encoded by encoding/json (what MarshalJSON did before it scanned). A
// document that is missing or not an object gives way to the typed order.
// It is the tests' oracle, not a second encoder.
func marshalByMap(m MirroredOrder) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m.Order.Raw, &fields); err != nil || fields == nil {
		b, err := json.Marshal(m.Order.withLists())
		if err != nil {
			return nil, err
		}
		fields = nil
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, err
		}
	}
	var err error
	if fields["sync"], err = json.Marshal(m.Sync); err != nil {
		return nil, err
	}
	if fields["account"], err = json.Marshal(m.Account); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// payloadDocs are documents MarshalJSON must encode exactly as the map
// encoding does: plain ones, spaced ones, escapes, odd and repeated names,
// and invalid ones (which give way to the typed order).
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

func payloadOf(doc []byte) MirroredOrder {
	seen := time.Date(2026, 10, 10, 18, 0, 0, 0, time.UTC)
	paid, changed := seen.Add(1500*time.Millisecond), seen.Add(2*time.Second)
	return MirroredOrder{
		Account: "acme & co",
		Order:   Order{Raw: doc},
		Sync: SyncInfo{FirstSeenAt: seen, LastSyncedAt: &seen, LastEventType: EventCreated, FetchCount: 2, FetchSeq: 7,
			PaidAt: &paid, StatusChangedAt: &changed},
	}
}

func checkPayload(t *testing.T, doc []byte) {
	t.Helper()
	m := payloadOf(doc)
	want, wantErr := marshalByMap(m)
	got, gotErr := m.MarshalJSON()
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("doc %q: MarshalJSON err %v, map encoding err %v", doc, gotErr, wantErr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("doc %q:\n MarshalJSON %s\nmap encoding %s", doc, got, want)
	}
}

// paidDoc is testdata/orders/paid.json as written (spaced out) and as the
// service sends it (compact).
func paidDoc(t testing.TB) (spaced, compact []byte) {
	t.Helper()
	spaced, err := os.ReadFile(filepath.Join("testdata", "orders", "paid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, spaced); err != nil {
		t.Fatal(err)
	}
	return spaced, b.Bytes()
}

func TestMarshalJSONMatchesMap(t *testing.T) {
	spaced, compact := paidDoc(t)
	docs := [][]byte{spaced, compact, nil}
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
	// A document that is not an object gives way to the typed order.
	checkPayload(t, []byte(" null"))
}

func FuzzMarshalJSON(f *testing.F) {
	spaced, compact := paidDoc(f)
	f.Add(spaced)
	f.Add(compact)
	for _, d := range payloadDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkPayload(t, doc)
	})
}

// marshalAllocBudget is the most allocations encoding one mirrored order
// (testdata/orders/paid.json) may cost. It sits a few above the count when
// it was set, so that a change of encoding/json does not fail it, while
// decoding the document into a map and encoding that (over a hundred
// allocations) does.
const marshalAllocBudget = 14

// marshalByteBudget is the most bytes encoding that order may allocate:
// its payload (about 1.9 KB) and little else, so the member list comes
// from fieldLists rather than a new one per order.
const marshalByteBudget = 3000

// TestMarshalJSONAllocBudget holds the one encoder of a mirrored order to
// its allocation budget: a count, not a time.
func TestMarshalJSONAllocBudget(t *testing.T) {
	_, compact := paidDoc(t)
	m := payloadOf(compact)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := m.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.0f allocations per order (budget %d)", allocs, marshalAllocBudget)
	if allocs > marshalAllocBudget {
		t.Errorf("encoding a mirrored order allocates %.0f times, over its budget of %d", allocs, marshalAllocBudget)
	}
	// AllocsPerRun's way, for bytes: one P, a warm-up run, then the mean.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const runs = 200
	var before, after runtime.MemStats
	if _, err := m.MarshalJSON(); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := m.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := (after.TotalAlloc - before.TotalAlloc) / runs; n > marshalByteBudget {
		t.Errorf("encoding a mirrored order allocates %d bytes, over its budget of %d", n, marshalByteBudget)
	}
}

func BenchmarkMarshalJSON(b *testing.B) {
	_, compact := paidDoc(b)
	m := payloadOf(compact)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}

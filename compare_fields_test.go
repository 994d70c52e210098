package ordersync

import (
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChangedFieldsMatchesDiffOrders holds the typed ChangedFields to the
// names the reflective DiffOrders gives, over random orders changed in
// random fields. The changes are made by reflection over Order's type, so a
// field added to Order that ChangedFields does not compare fails here.
func TestChangedFieldsMatchesDiffOrders(t *testing.T) {
	for seed := range uint64(3000) {
		checkChangedFields(t, seed, int(seed%5))
	}
}

// FuzzChangedFields is TestChangedFieldsMatchesDiffOrders for any seed and
// number of changes.
func FuzzChangedFields(f *testing.F) {
	f.Add(uint64(1), uint8(1))
	f.Add(uint64(7), uint8(6))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		checkChangedFields(t, seed, int(n%16))
	})
}

// TestChangedFieldsReachesEveryField checks that the random changes reach
// every field DiffOrders compares: a field they never changed would not be
// held to DiffOrders by the test above.
func TestChangedFieldsReachesEveryField(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(3000) {
		prev, next := changedPair(t, seed, 1)
		for _, f := range ChangedFields(prev, next) {
			seen[strings.NewReplacer("[0]", "[]", "[1]", "[]", "[2]", "[]").Replace(f)] = true
		}
	}
	var missing []string
	for _, leaf := range leafPaths(reflect.TypeFor[Order](), "") {
		if !seen[leaf] {
			missing = append(missing, leaf)
		}
	}
	if len(missing) > 0 {
		t.Errorf("no random change reached %q", missing)
	}
}

func checkChangedFields(t *testing.T, seed uint64, changes int) {
	t.Helper()
	prev, next := changedPair(t, seed, changes)
	var want []string
	for _, d := range DiffOrders(prev, next) {
		path, _, _ := strings.Cut(d, ": ")
		want = append(want, path)
	}
	if got := ChangedFields(prev, next); !slices.Equal(got, want) {
		t.Fatalf("seed %d, %d changes: ChangedFields = %q, DiffOrders names %q", seed, changes, got, want)
	}
}

// changedPair is a random order and a copy of it with changes random
// changes (some of which may change nothing).
func changedPair(t *testing.T, seed uint64, changes int) (*Order, *Order) {
	t.Helper()
	var prev, next Order
	fillValue(t, rand.New(rand.NewPCG(seed, 1)), reflect.ValueOf(&prev).Elem())
	fillValue(t, rand.New(rand.NewPCG(seed, 1)), reflect.ValueOf(&next).Elem())
	r := rand.New(rand.NewPCG(seed, 2))
	for range changes {
		changeValue(t, r, reflect.ValueOf(&next).Elem())
	}
	return &prev, &next
}

var (
	sampleAmounts = []string{"0", "0.00", "6.5", "6.50", "-6.50", "13.00", "650", "1E+2", "100", "0.99"}
	sampleStrings = []string{"", "a", "b", "PAID", "José", "884213"}
	sampleTimes   = []Timestamp{{}, {time.Date(2026, 10, 10, 18, 2, 41, 553e6, time.UTC)},
		// The same instant in another zone: Equal, so no change.
		{time.Date(2026, 10, 10, 12, 2, 41, 553e6, time.FixedZone("CST", -6*3600))},
		{time.Date(2026, 10, 10, 18, 2, 41, 554e6, time.UTC)}}
)

var (
	amountT    = reflect.TypeFor[Amount]()
	timestampT = reflect.TypeFor[Timestamp]()
)

// compared reports whether DiffOrders compares struct field f.
func compared(f reflect.StructField) bool { return f.IsExported() && f.Type != rawType }

// fillValue sets v, and everything under it, to random values.
func fillValue(t *testing.T, r *rand.Rand, v reflect.Value) {
	switch {
	case v.Type() == amountT:
		v.Set(reflect.ValueOf(MustAmount(sampleAmounts[r.IntN(len(sampleAmounts))])))
		return
	case v.Type() == timestampT:
		v.Set(reflect.ValueOf(sampleTimes[r.IntN(len(sampleTimes))]))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if compared(v.Type().Field(i)) {
				fillValue(t, r, v.Field(i))
			}
		}
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(t, r, v.Elem())
	case reflect.Slice:
		n := r.IntN(4)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fillValue(t, r, v.Index(i))
		}
	case reflect.String:
		v.SetString(sampleStrings[r.IntN(len(sampleStrings))])
	case reflect.Int:
		v.SetInt(int64(r.IntN(3)))
	default:
		t.Fatalf("the test cannot fill a %s: teach fillValue and changeValue", v.Type())
	}
}

// changeValue changes one random field under v.
func changeValue(t *testing.T, r *rand.Rand, v reflect.Value) {
	if v.Type() == amountT || v.Type() == timestampT {
		fillValue(t, r, v)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		var fields []int
		for i := range v.NumField() {
			if compared(v.Type().Field(i)) {
				fields = append(fields, i)
			}
		}
		changeValue(t, r, v.Field(fields[r.IntN(len(fields))]))
	case reflect.Pointer:
		switch {
		case r.IntN(4) == 0:
			v.SetZero()
		case v.IsNil():
			fillValue(t, r, v)
		default:
			changeValue(t, r, v.Elem())
		}
	case reflect.Slice:
		switch n := v.Len(); {
		case n == 0 || r.IntN(4) == 0:
			fillValue(t, r, v)
		default:
			changeValue(t, r, v.Index(r.IntN(n)))
		}
	default:
		fillValue(t, r, v)
	}
}

// leafPaths names every field DiffOrders compares one by one, as
// ChangedFields names them with entries' indexes written [].
func leafPaths(typ reflect.Type, path string) []string {
	if typ == amountT || typ == timestampT {
		return []string{path}
	}
	switch typ.Kind() {
	case reflect.Struct:
		var out []string
		for i := range typ.NumField() {
			if f := typ.Field(i); compared(f) {
				out = append(out, leafPaths(f.Type, join(path, f.Name))...)
			}
		}
		return out
	case reflect.Pointer:
		return append([]string{path}, leafPaths(typ.Elem(), path)...)
	case reflect.Slice:
		return append([]string{path}, leafPaths(typ.Elem(), path+"[]")...)
	}
	return []string{path}
}

// BenchmarkChangedFields compares an order fetched PENDING with the same
// order fetched PAID, as the mirror does on a status change.
func BenchmarkChangedFields(b *testing.B) {
	doc, err := os.ReadFile("testdata/orders/paid.json")
	if err != nil {
		b.Fatal(err)
	}
	next, err := DecodeOrder(doc)
	if err != nil {
		b.Fatal(err)
	}
	prev := *next
	prev.OrderStatus, prev.Payment = StatusPending, nil
	b.ReportAllocs()
	for b.Loop() {
		if f := ChangedFields(&prev, next); len(f) != 2 {
			b.Fatalf("ChangedFields = %q", f)
		}
	}
}

package ordersync

import (
	"fmt"
	"reflect"
)

// DiffOrders compares two order details field by field and returns a line
// per difference, empty when they are the same. Amounts must match digit for
// digit ("6.50" differs from "6.5"): the mirror keeps money exactly as sent.
// Raw is not compared. Tests and internal/compare (the demo's and the chaos
// run's report) use it to hold the mirror against the service's truth.
func DiffOrders(want, got *Order) []string {
	var diffs []string
	diffValue("", reflect.ValueOf(*want), reflect.ValueOf(*got), func(path, format string, args ...any) {
		diffs = append(diffs, path+": "+fmt.Sprintf(format, args...))
	})
	return diffs
}

// ChangedFields names the fields of an order detail that differ from prev
// to next, as DiffOrders names them ("Payment.Buyer.Email",
// "LineItems[0].Price"), without their values: the mirror records which
// fields a fetch changed, and buyers' data must not be copied into that
// record. Empty when only what Order does not read changed.
func ChangedFields(prev, next *Order) []string {
	var fields []string
	diffValue("", reflect.ValueOf(*prev), reflect.ValueOf(*next), func(path, _ string, _ ...any) {
		fields = append(fields, path)
	})
	return fields
}

// differ is told each difference diffValue finds: where, and what it is.
type differ func(path, format string, args ...any)

var (
	amountType = reflect.TypeOf(Amount{})
	rawType    = reflect.TypeOf(Order{}.Raw)
)

func diffValue(path string, a, b reflect.Value, diff differ) {
	if a.Type() == amountType {
		x, y := a.Interface().(Amount), b.Interface().(Amount)
		if !x.Identical(y) {
			diff(path, "want %s, got %s", x, y)
		}
		return
	}
	if ta, tb := a.Type(), b.Type(); ta == reflect.TypeOf(Timestamp{}) && tb == ta {
		x, y := a.Interface().(Timestamp), b.Interface().(Timestamp)
		if !x.Equal(y.Time) {
			diff(path, "want %s, got %s", x, y)
		}
		return
	}
	switch a.Kind() {
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			f := a.Type().Field(i)
			if f.Type == rawType || !f.IsExported() {
				continue
			}
			diffValue(join(path, f.Name), a.Field(i), b.Field(i), diff)
		}
	case reflect.Pointer:
		switch {
		case a.IsNil() && b.IsNil():
		case a.IsNil() != b.IsNil():
			diff(path, "want %s, got %s", nilness(a), nilness(b))
		default:
			diffValue(path, a.Elem(), b.Elem(), diff)
		}
	case reflect.Slice:
		if a.Len() != b.Len() {
			diff(path, "want %d entries, got %d", a.Len(), b.Len())
			return
		}
		for i := 0; i < a.Len(); i++ {
			diffValue(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), diff)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			diff(path, "want %v, got %v", a.Interface(), b.Interface())
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func nilness(v reflect.Value) string {
	if v.IsNil() {
		return "nil"
	}
	return "a value"
}

package ordersync

import (
	"fmt"
	"reflect"
)

// DiffOrders compares two order details field by field and returns a line
// per difference, empty when they are the same. Amounts must match digit for
// digit ("6.50" differs from "6.5"): the mirror keeps money exactly as sent.
// Raw is not compared. The demo, the end-to-end tests and the chaos test use
// it to hold the mirror against the service's truth.
func DiffOrders(want, got *Order) []string {
	var diffs []string
	diffValue("", reflect.ValueOf(*want), reflect.ValueOf(*got), &diffs)
	return diffs
}

var (
	amountType = reflect.TypeOf(Amount{})
	rawType    = reflect.TypeOf(Order{}.Raw)
)

func diffValue(path string, a, b reflect.Value, diffs *[]string) {
	if a.Type() == amountType {
		x, y := a.Interface().(Amount), b.Interface().(Amount)
		if !x.Identical(y) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, x, y))
		}
		return
	}
	if ta, tb := a.Type(), b.Type(); ta == reflect.TypeOf(Timestamp{}) && tb == ta {
		x, y := a.Interface().(Timestamp), b.Interface().(Timestamp)
		if !x.Equal(y.Time) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, x, y))
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
			diffValue(join(path, f.Name), a.Field(i), b.Field(i), diffs)
		}
	case reflect.Pointer:
		switch {
		case a.IsNil() && b.IsNil():
		case a.IsNil() != b.IsNil():
			*diffs = append(*diffs, fmt.Sprintf("%s: want %s, got %s", path, nilness(a), nilness(b)))
		default:
			diffValue(path, a.Elem(), b.Elem(), diffs)
		}
	case reflect.Slice:
		if a.Len() != b.Len() {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %d entries, got %d", path, a.Len(), b.Len()))
			return
		}
		for i := 0; i < a.Len(); i++ {
			diffValue(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), diffs)
		}
	default:
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %v, got %v", path, a.Interface(), b.Interface()))
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

package ordersync

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodeOrderEncodingJSON is DecodeOrder as encoding/json does it: the
// reference DecodeOrder must agree with on every input.
func decodeOrderEncodingJSON(doc []byte) (*Order, error) {
	if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("decode order detail: not a JSON object")
	}
	var o Order
	if err := json.Unmarshal(doc, &o); err != nil {
		return nil, fmt.Errorf("decode order detail: %w", err)
	}
	if o.Payment.IsEmpty() {
		o.Payment = nil
	}
	o.OrderStatus = Status(strings.ToUpper(string(o.OrderStatus)))
	o.Raw = append(json.RawMessage(nil), doc...)
	return &o, nil
}

// decodesAsEncodingJSON fails t unless DecodeOrder accepts doc exactly
// when encoding/json does, giving the same order.
func decodesAsEncodingJSON(t *testing.T, doc []byte) {
	t.Helper()
	got, err := DecodeOrder(doc)
	want, wantErr := decodeOrderEncodingJSON(doc)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("DecodeOrder(%.200q): error %v; encoding/json: error %v", doc, err, wantErr)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "decode order detail: ") {
			t.Errorf("error %q does not say what was being done", err)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("DecodeOrder(%.200q) =\n%s\nencoding/json:\n%s", doc, g, w)
	}
}

// TestDecodeOrderAsEncodingJSON: hostile and odd documents are accepted
// or refused as encoding/json accepts or refuses them, with the same
// result: unknown and duplicate names, names in another case, numbers too
// large, invalid UTF-8, nulls, trailing bytes.
func TestDecodeOrderAsEncodingJSON(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	docs := []string{
		`{}`, ` {"orderCode":"a"} `, `{"orderCode":"a"} x`, `{}{}`, `{"orderCode":"a",}`, "\xef\xbb\xbf{}",
		// Unknown members, however deep.
		`{"shiny":{"new":[1,{"x":null}]},"lineItems":[{"extra":true}]}`,
		`{"shiny":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`,
		`{"shiny":` + deep + `}`,
		// Duplicate names: the last wins, objects merge.
		`{"orderCode":"a","orderCode":"b"}`,
		`{"orderCode":"a","ORDERCODE":"b"}`,
		`{"ORDERCODE":"b","orderCode":"a"}`,
		`{"store":{"name":"x"},"store":{"locale":"y"}}`,
		`{"store":{"name":"x"},"store":null}`,
		`{"lineItems":[{"name":"a","sku":"s"},{"name":"b"}],"lineItems":[{"quantity":2}]}`,
		`{"lineItems":[{"name":"a"}],"lineItems":null}`,
		`{"lineItems":[{"promoPrice":1.5}],"lineItems":[{"promoPrice":null}]}`,
		`{"payment":{"authorizationCode":"x"},"payment":{}}`,
		`{"payment":{"buyer":{"name":"n"}},"payment":{"buyer":null}}`,
		`{"payment":{"authorizationCode":"x"},"payment":null}`,
		`{"name":"x","name":null}`, `{"total":1,"total":null}`, `{"orderId":1,"orderId":null}`,
		`{"created":"2026-10-10T18:01:12Z","created":null}`, `{"created":"2026-10-10T18:01:12Z","created":""}`,
		`{"metadata":[{"name":"a","value":"1"}],"metadata":[]}`,
		// Names in other cases and with other delimiters.
		`{"ORDERSTATUS":"paid","OrderCode":"c","LINEITEMS":[{"PRICE":1}]}`,
		`{"order_code":"a","order-code":"b"}`,
		"{\"order\u017ftatus\":\"paid\"}", "{\"\u212aey\":1,\"lineitems\":[{\"s\u212au\":\"x\"}]}",
		// Numbers.
		`{"lineItems":[{"quantity":1e400}]}`, `{"lineItems":[{"quantity":99999999999999999999}]}`,
		`{"lineItems":[{"quantity":-0}]}`, `{"lineItems":[{"quantity":1.0}]}`, `{"lineItems":[{"quantity":1e2}]}`,
		`{"lineItems":[{"quantity":"2"}]}`, `{"lineItems":[{"quantity":-9223372036854775808}]}`,
		`{"lineItems":[{"quantity":9223372036854775808}]}`, `{"lineItems":[{"quantity":01}]}`,
		`{"total":1e400}`, `{"total":1e-400}`, `{"total":123456789012345678901234567890}`, `{"total":-0}`,
		`{"total":"1e2"}`, `{"total":" 14.25 "}`, `{"total":"\u0031"}`, `{"total":true}`, `{"total":[1]}`,
		`{"orderId":1e999}`, `{"orderId":123456789012345678901234567890}`, `{"orderId":-0.0}`, `{"orderId":+1}`,
		`{"orderId":.5}`, `{"orderId":NaN}`, `{"orderId":Infinity}`,
		// Strings: invalid UTF-8, surrogates, control characters.
		"{\"name\":\"caf\xe9\"}", "{\"name\":\"\xff\xfe\"}", "{\"na\xffme\":\"x\"}", "{\"orderId\":\"1\xff\"}",
		"{\"created\":\"2026-10-10T18:01:12\xffZ\"}", "{\"total\":\"1\xff\"}", "{\"shiny\":\"\xff\"}",
		`{"name":"\ud800"}`, `{"name":"\ud83d\ude00"}`, `{"name":"\udc00\ud800"}`, "{\"name\":\"tab\there\"}",
		`{"name":"\x"}`, `{"name":"\u12"}`, "{\"name\":\"\x00\"}", `{"name":"<&>\u2028"}`,
		// Types that do not fit.
		`{"orderCode":5}`, `{"orderCode":true,"name":"x"}`, `{"lineItems":{}}`, `{"lineItems":[null]}`,
		`{"lineItems":[1]}`, `{"store":[]}`, `{"payment":"paid"}`, `{"metadata":[{"name":"a","value":1}]}`,
		`{"orderStatus":null}`, `{"orderStatus":"pAiD"}`, `{"created":5}`, `{"created":"ayer"}`,
		`{"created":"9999-12-31T23:59:59-01:00"}`, `{"created":"2026-10-10 18:01:12.5+02:00"}`,
		`{"totalDetails":{"shippingAmount":"NaN"}}`, `{"lineItems":[{"promoPrice":"x"}]}`,
	}
	for _, doc := range docs {
		t.Run(fmt.Sprintf("%.40q", doc), func(t *testing.T) { decodesAsEncodingJSON(t, []byte(doc)) })
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "orders"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) { decodesAsEncodingJSON(t, readTestdata(t, filepath.Join("orders", e.Name()))) })
	}
}

// FuzzDecodeOrderAsEncodingJSON: on any input DecodeOrder agrees with
// encoding/json.
func FuzzDecodeOrderAsEncodingJSON(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "orders"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		f.Add(readTestdata(f, filepath.Join("orders", e.Name())))
	}
	for _, s := range []string{`{"orderCode":"a","ORDERCODE":"b","store":{"name":"x"},"store":{"locale":"y"}}`,
		"{\"name\":\"\xff\",\"lineItems\":[{\"quantity\":1e400}]}", `{"payment":{"authorizationCode":"x"},"payment":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(decodesAsEncodingJSON)
}
